"""kineto_values.time_ns's fast path for plain ints and floats (issue 57) gives what the checked conversion
gives: the same ns, the same type, the same values dropped and counted."""
import math
import random
from collections import Counter

from nsys_expert.load import kineto_values as kv


def _checked(us, dropped, what):
    """The conversion before the fast path: float, then the finite and range checks."""
    try:
        x = float(us) * 1000.0
    except (TypeError, ValueError, OverflowError):
        dropped[(what, "kineto.time_not_number", "")] += 1
        return None
    if not math.isfinite(x) or abs(x) >= kv.LIMIT_NS:
        dropped[(what, "kineto.time_out_of_range", "")] += 1
        return None
    return int(round(x))


def test_fast_path_gives_the_checked_conversion():
    rng = random.Random(57)
    edge = (1 << 53) // 1000
    vals = [0, 1, -1, 0.5, 1.5, 2.5, -0.5, 1234.5675, True, False, None, "12", "x", [], 1e400, -1e400,
            float("nan"), 2**70, -(2**70), edge, edge - 1, 1 - edge, (1 << 62) // 1000, (1 << 62) // 1000 + 1,
            4.611686018427388e15, 4.611686018427387e15]
    vals += [rng.uniform(-1e16, 1e16) for _ in range(3000)] + [rng.randint(-10**16, 10**16) for _ in range(3000)]
    vals += [rng.randint(0, 10**13) + rng.random() for _ in range(3000)]
    for v in vals:
        want, got = Counter(), Counter()
        a, b = _checked(v, want, "events"), kv.time_ns(v, got, "events")
        assert a == b and type(a) is type(b) and want == got, v
