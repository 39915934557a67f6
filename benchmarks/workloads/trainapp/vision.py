"""Vision models of the application whose convolutions cuDNN must choose algorithms for: a small
U-Net (transposed convolutions in the decoder, group norm), a video net of 3-D convolutions and a
depthwise-separable (MobileNet-style) classifier. ``build(name)`` makes one by name."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_gn(cin, cout, k=3, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                         nn.GroupNorm(8 if cout % 8 == 0 else 1, cout), nn.SiLU())


class UNet(nn.Module):
    """Encoder of strided convolutions, decoder of transposed convolutions with skip connections."""

    def __init__(self, widths=(40, 80, 160, 320), cin=3, cout=3):
        super().__init__()
        self.stem = conv_gn(cin, widths[0])
        self.down = nn.ModuleList(conv_gn(a, b, stride=2) for a, b in zip(widths, widths[1:]))
        self.up = nn.ModuleList(nn.ConvTranspose2d(b, a, 4, 2, 1) for a, b in zip(widths, widths[1:]))
        self.fuse = nn.ModuleList(conv_gn(2 * a, a) for a in widths[:-1])
        self.out = nn.Conv2d(widths[0], cout, 3, 1, 1)

    def forward(self, x):
        skips, x = [], self.stem(x)
        for down in self.down:
            skips.append(x)
            x = down(x)
        for up, fuse in zip(reversed(self.up), reversed(self.fuse)):
            x = fuse(torch.cat([up(x), skips.pop()], dim=1))
        return self.out(x)


class Video3D(nn.Module):
    """A clip classifier of 3-D convolutions (time x height x width)."""

    def __init__(self, widths=(24, 48, 96, 192), classes=100):
        super().__init__()
        layers, cin = [], 3
        for i, w in enumerate(widths):
            stride = (1, 2, 2) if i == 0 else 2
            layers += [nn.Conv3d(cin, w, 3, stride, 1, bias=False), nn.BatchNorm3d(w), nn.ReLU(inplace=True),
                       nn.Conv3d(w, w, 3, 1, 1, bias=False), nn.BatchNorm3d(w), nn.ReLU(inplace=True)]
            cin = w
        self.features, self.fc = nn.Sequential(*layers), nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool3d(self.features(x), 1), 1))


class Separable(nn.Module):
    """Depthwise-separable blocks (MobileNet style): a depthwise 3x3 then a pointwise 1x1."""

    def __init__(self, widths=(32, 64, 128, 256, 512), classes=100):
        super().__init__()
        blocks, cin = [conv_gn(3, widths[0], stride=2)], widths[0]
        for w in widths[1:]:
            blocks += [conv_gn(cin, cin, groups=cin, stride=2), conv_gn(cin, w, k=1),
                       conv_gn(w, w, groups=w), conv_gn(w, w, k=1)]
            cin = w
        self.features, self.fc = nn.Sequential(*blocks), nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


# name -> (model class, input shape, channels_last, target: "class" | "image")
NETS = {
    "unet": (UNet, (16, 3, 192, 192), True, "image"),
    "unet_fp32": (UNet, (16, 3, 192, 192), False, "image"),
    "video3d": (Video3D, (8, 3, 16, 112, 112), False, "class"),
    "separable": (Separable, (128, 3, 160, 160), True, "class"),
}


def build(name, device):
    cls, shape, channels_last, target = NETS[name]
    model = cls().to(device)
    x = torch.randn(*shape, device=device)
    if channels_last:
        model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    y = torch.randn_like(x) if target == "image" else torch.randint(0, 100, (shape[0],), device=device)
    return model, x, y
