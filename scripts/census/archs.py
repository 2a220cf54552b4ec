"""Architectures that no installable package ships, written here from their papers and reference code.

Every model in this file is marked `source: "architecture"` in the census, with the reference it was
written from. Only the layers the census is about need to be exact (their attributes and the shapes
that reach them); the rest follows the reference closely enough to give those shapes.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torchvision


class SpaceToDepth(nn.Module):
    """SpaceToDepth with ONNX's DCR order: out[:, (i*b + j)*C + c] = in[:, c, i::b, j::b].

    This is how the YOLOv2 passthrough ("reorg", stride 2) is expressed when Darknet models are
    converted to ONNX. The census records it as the layer `space_to_depth` (blocksize, mode).
    """

    census_kind = "space_to_depth"

    def __init__(self, blocksize: int = 2):
        super().__init__()
        self.blocksize = blocksize
        self.mode = "DCR"

    def census_attrs(self) -> dict:
        return {"blocksize": self.blocksize, "mode": self.mode}

    def forward(self, x):
        n, c, h, w = x.shape
        b = self.blocksize
        x = x.reshape(n, c, h // b, b, w // b, b)
        x = x.permute(0, 3, 5, 1, 2, 4)
        return x.reshape(n, b * b * c, h // b, w // b)


def _conv_bn_leaky(cin, cout, k):
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, 1, k // 2, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.1)
    )


class YOLOv2(nn.Module):
    """YOLOv2 (Redmon and Farhadi, "YOLO9000: Better, Faster, Stronger", CVPR 2017; Darknet's
    cfg/yolov2.cfg, 608x608, 80 classes): Darknet-19 to conv5, the passthrough branch (1x1 conv to 64
    channels, then reorg stride 2) concatenated with conv6, and the detection conv.

    Darknet's [maxpool] size=2 stride=2 on even sizes is MaxPool2d(2, 2).
    """

    def __init__(self, num_anchors: int = 5, num_classes: int = 80):
        super().__init__()
        cfg = [32, "M", 64, "M", 128, 64, 128, "M", 256, 128, 256, "M", 512, 256, 512, 256, 512]
        layers, cin = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                k = 1 if (layers and isinstance(layers[-1], nn.Sequential) and v < cin) else 3
                layers.append(_conv_bn_leaky(cin, v, k))
                cin = v
        self.stage1 = nn.Sequential(*layers)  # 512 x 38 x 38 at 608
        cfg2 = [1024, 512, 1024, 512, 1024]
        layers, cin = [nn.MaxPool2d(2, 2)], 512
        for v in cfg2:
            layers.append(_conv_bn_leaky(cin, v, 3 if v == 1024 else 1))
            cin = v
        self.stage2 = nn.Sequential(*layers)  # 1024 x 19 x 19
        self.head1 = nn.Sequential(_conv_bn_leaky(1024, 1024, 3), _conv_bn_leaky(1024, 1024, 3))
        self.passthrough = _conv_bn_leaky(512, 64, 1)
        self.reorg = SpaceToDepth(2)  # 64 x 38 x 38 -> 256 x 19 x 19
        self.head2 = _conv_bn_leaky(1024 + 256, 1024, 3)
        self.detect = nn.Conv2d(1024, num_anchors * (5 + num_classes), 1)

    def forward(self, x):
        p = self.stage1(x)
        y = self.head1(self.stage2(p))
        r = self.reorg(self.passthrough(p))
        return self.detect(self.head2(torch.cat([r, y], 1)))


class ESPCN(nn.Module):
    """ESPCN (Shi et al., "Real-Time Single Image and Video Super-Resolution Using an Efficient
    Sub-Pixel Convolutional Neural Network", CVPR 2016): on the luminance channel, conv 5x5 (64),
    tanh, conv 3x3 (32), tanh, conv 3x3 (r*r), then the sub-pixel layer PixelShuffle(r).
    The paper's video setting: x3 from 640x360 to 1920x1080.
    """

    def __init__(self, upscale: int = 3, channels: int = 1):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, 64, 5, padding=2), nn.Tanh(),
            nn.Conv2d(64, 32, 3, padding=1), nn.Tanh(),
            nn.Conv2d(32, channels * upscale * upscale, 3, padding=1),
        )
        self.shuffle = nn.PixelShuffle(upscale)

    def forward(self, x):
        return self.shuffle(self.body(x))


class SuperResolutionNet(nn.Module):
    """The super-resolution network of PyTorch's ONNX export tutorial (pytorch/tutorials,
    advanced_source/super_resolution_with_onnxruntime.py, the model ONNX Runtime's tutorials run):
    ESPCN-like, upscale factor 3, 1x1x224x224 luminance input.
    """

    def __init__(self, upscale_factor: int = 3):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


class FastRCNNVGG16(nn.Module):
    """Fast R-CNN with VGG16 (Girshick, "Fast R-CNN", ICCV 2015; rbgirshick/py-faster-rcnn,
    models/pascal_voc/VGG16/fast_rcnn/test.prototxt): conv1_1..conv5_3 with Caffe's pooling, which
    rounds output sizes up (ceil), so a 600x800 image gives conv5_3 of 512x38x50; the RoI pooling
    layer (7x7, spatial scale 1/16) on the image's RoIs; fc6, fc7 and the two heads.
    """

    def __init__(self, num_classes: int = 21):
        super().__init__()
        cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512]
        layers, cin = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2, ceil_mode=True))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
                cin = v
        self.features = nn.Sequential(*layers)
        self.roi_pool = torchvision.ops.RoIPool((7, 7), 1.0 / 16)
        self.fc = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True),
        )
        self.cls_score = nn.Linear(4096, num_classes)
        self.bbox_pred = nn.Linear(4096, num_classes * 4)

    def forward(self, image, rois):
        f = self.roi_pool(self.features(image), rois)
        f = self.fc(f.flatten(1))
        return self.cls_score(f), self.bbox_pred(f)


def fast_rcnn_rois(num: int, height: int, width: int, device="cpu") -> torch.Tensor:
    """`num` RoIs as Fast R-CNN gets them (batch index, x1, y1, x2, y2 in image pixels), seeded."""
    g = torch.Generator().manual_seed(0)
    x1 = torch.rand(num, generator=g) * (width - 32)
    y1 = torch.rand(num, generator=g) * (height - 32)
    w = 16 + torch.rand(num, generator=g) * (width / 2)
    h = 16 + torch.rand(num, generator=g) * (height / 2)
    boxes = torch.stack([
        torch.zeros(num), x1, y1, (x1 + w).clamp(max=width - 1), (y1 + h).clamp(max=height - 1)
    ], 1)
    return boxes.to(device)
