"""Times each net of vision.NETS (forward + backward under bf16 autocast, except ``*_fp32``) with
``cudnn.benchmark`` off, then on, and prints the gain; the last line names the net of the largest gain
(``best NAME GAIN``). usage: python cudnn_sweep.py [STEPS]"""
import sys
import time

import torch
import torch.nn.functional as F

import vision


def time_steps(model, x, y, n, amp):
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            out = model(x)
            loss = F.mse_loss(out.float(), y) if out.shape == y.shape else F.cross_entropy(out.float(), y)
        loss.backward()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e3


def main(n):
    best = (None, -1e9)
    for name in vision.NETS:
        model, x, y = vision.build(name, "cuda")
        amp = not name.endswith("_fp32")
        torch.backends.cudnn.benchmark = False
        off = time_steps(model, x, y, n, amp)
        torch.backends.cudnn.benchmark = True
        on = time_steps(model, x, y, n, amp)
        gain = 100 * (1 - on / off)
        print(f"{name}: benchmark off {off:.2f} ms, on {on:.2f} ms, gain {gain:.1f} %", flush=True)
        best = max(best, (name, gain), key=lambda t: t[1])
        del model, x, y
        torch.cuda.empty_cache()
    print(f"best {best[0]} {best[1]:.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
