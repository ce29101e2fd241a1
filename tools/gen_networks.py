#!/usr/bin/env python3
"""Generates the bundled network definitions in datasets/networks/<name>.json.

The layer shapes are transcribed from the reference implementations named in each file's
`source`; FLOPs and activation sizes are computed here from those shapes (per sample, one
multiply-add = 2 FLOPs; the per-element costs of the cheap layers are in docs/formats.md).
Python 3 standard library only. Output is deterministic: run it twice, get the same bytes.

Usage: tools/gen_networks.py [--out DIR] [--check]
  --check  exit 1 if a file in DIR differs from what would be written (nothing is written).
"""

import argparse
import json
import math
import os
import sys

# Per-element FLOPs of the cheap layers; docs/formats.md repeats this table.
RELU_FLOPS = 1  # one compare/select
BN_FLOPS = 4  # (x - mean) * inv_std * gamma + beta, statistics folded
ADD_FLOPS = 1  # residual / embedding sum, per input after the first
DROPOUT_FLOPS = 1  # mask multiply (training)
LAYERNORM_FLOPS = 8  # mean, variance, normalize, scale and shift
GELU_FLOPS = 8  # tanh approximation
TANH_FLOPS = 4
SOFTMAX_FLOPS = 5  # max, subtract, exp, sum, divide


class Net:
    """Accumulates layers in forward order while tracking the current activation shape."""

    def __init__(self, name, description, source, input_shape):
        self.name = name
        self.description = description
        self.source = source
        self.input_shape = list(input_shape)
        self.layers = []
        self.shape = tuple(input_shape)  # (C, H, W) for CNNs, (features,) for MLPs

    def add(self, name, kind, params, flops, out_shape):
        assert all(layer["name"] != name for layer in self.layers), name
        assert flops >= 0 and int(flops) == flops, (name, flops)
        self.layers.append({
            "name": name,
            "type": kind,
            "params": [{"name": n, "shape": list(s)} for n, s in params],
            "forward_flops": int(flops),
            "activation_elements": prod(out_shape),
        })
        self.shape = tuple(out_shape)
        return self.shape

    # --- CNN layers; shapes are (C, H, W) ---------------------------------------------------

    def conv(self, name, cout, k, stride=1, pad=0, groups=1, bias=True, inp=None):
        c, h, w = inp if inp is not None else self.shape
        kh, kw = (k, k) if isinstance(k, int) else k
        ph, pw = (pad, pad) if isinstance(pad, int) else pad
        ho = (h + 2 * ph - kh) // stride + 1
        wo = (w + 2 * pw - kw) // stride + 1
        params = [("weight", (cout, c // groups, kh, kw))]
        if bias:
            params.append(("bias", (cout,)))
        flops = 2 * (c // groups) * kh * kw * cout * ho * wo
        return self.add(name, "conv", params, flops, (cout, ho, wo))

    def bn(self, name):
        c = self.shape[0]
        return self.add(name, "bn", [("weight", (c,)), ("bias", (c,))],
                        BN_FLOPS * prod(self.shape), self.shape)

    def relu(self, name):
        return self.add(name, "relu", [], RELU_FLOPS * prod(self.shape), self.shape)

    def dropout(self, name):
        return self.add(name, "dropout", [], DROPOUT_FLOPS * prod(self.shape), self.shape)

    def pool(self, name, k, stride, pad=0, ceil=False, caffe=False, inp=None):
        """Max or average pooling: k*k FLOPs (compares or adds) per output element.

        PyTorch ceil_mode and Caffe both round the output size up, but drop a last window
        that would start inside the right padding.
        """
        c, h, w = inp if inp is not None else self.shape
        ho = pool_out(h, k, stride, pad, ceil or caffe)
        wo = pool_out(w, k, stride, pad, ceil or caffe)
        return self.add(name, "pool", [], k * k * c * ho * wo, (c, ho, wo))

    def adaptive_avgpool(self, name, oh, ow):
        c, h, w = self.shape
        # Every input element is summed into one window when h, w are multiples of oh, ow;
        # AlexNet's and VGG's 6x6 / 7x7 adaptive pools are identities at 224x224.
        return self.add(name, "pool", [], c * h * w, (c, oh, ow))

    def lrn(self, name, size):
        # Sum of squares over `size` channels (2*size), then scale, power and divide.
        return self.add(name, "lrn", [], (2 * size + 4) * prod(self.shape), self.shape)

    def concat(self, name, shapes):
        c = sum(s[0] for s in shapes)
        _, h, w = shapes[0]
        assert all(s[1:] == (h, w) for s in shapes), (name, shapes)
        return self.add(name, "concat", [], 0, (c, h, w))

    def residual_add(self, name, shape):
        return self.add(name, "add", [], ADD_FLOPS * prod(shape), shape)

    def flatten_fc(self, name, out, bias=True):
        """Fully connected layer on the flattened activation; PyTorch weight layout [out, in]."""
        fin = prod(self.shape)
        params = [("weight", (out, fin))] + ([("bias", (out,))] if bias else [])
        return self.add(name, "fc", params, 2 * fin * out, (out,))


def prod(xs):
    return math.prod(xs)


def pool_out(n, k, stride, pad, ceil):
    if not ceil:
        return (n + 2 * pad - k) // stride + 1
    out = -(-(n + 2 * pad - k) // stride) + 1
    if (out - 1) * stride >= n + pad:
        out -= 1
    return out


# --- torchvision models --------------------------------------------------------------------

TV = "torchvision.models ({}), torchvision v0.15+ source"


def alexnet():
    n = Net("alexnet",
            "AlexNet (one-GPU variant of Krizhevsky et al. 2012) as in torchvision; 224x224 RGB "
            "input, 1000 classes.",
            TV.format("alexnet.py: AlexNet"), (3, 224, 224))
    n.conv("features.0", 64, 11, stride=4, pad=2)
    n.relu("features.1")
    n.pool("features.2", 3, 2)
    n.conv("features.3", 192, 5, pad=2)
    n.relu("features.4")
    n.pool("features.5", 3, 2)
    n.conv("features.6", 384, 3, pad=1)
    n.relu("features.7")
    n.conv("features.8", 256, 3, pad=1)
    n.relu("features.9")
    n.conv("features.10", 256, 3, pad=1)
    n.relu("features.11")
    n.pool("features.12", 3, 2)
    n.adaptive_avgpool("avgpool", 6, 6)
    n.dropout("classifier.0")
    n.flatten_fc("classifier.1", 4096)
    n.relu("classifier.2")
    n.dropout("classifier.3")
    n.flatten_fc("classifier.4", 4096)
    n.relu("classifier.5")
    n.flatten_fc("classifier.6", 1000)
    return n


def vgg16():
    n = Net("vgg16",
            "VGG-16 (configuration D of Simonyan and Zisserman 2015, no batch norm) as in "
            "torchvision; 224x224 RGB input, 1000 classes.",
            TV.format("vgg.py: vgg16, cfgs['D']"), (3, 224, 224))
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
           512, 512, 512, "M"]
    i = 0
    for v in cfg:
        if v == "M":
            n.pool(f"features.{i}", 2, 2)
            i += 1
        else:
            n.conv(f"features.{i}", v, 3, pad=1)
            n.relu(f"features.{i + 1}")
            i += 2
    n.adaptive_avgpool("avgpool", 7, 7)
    n.flatten_fc("classifier.0", 4096)
    n.relu("classifier.1")
    n.dropout("classifier.2")
    n.flatten_fc("classifier.3", 4096)
    n.relu("classifier.4")
    n.dropout("classifier.5")
    n.flatten_fc("classifier.6", 1000)
    return n


def resnet50():
    return resnet_bottleneck(
        "resnet50", [3, 4, 6, 3],
        "ResNet-50 (He et al. 2016, torchvision's v1.5: stride 2 in the 3x3 convolution of "
        "each stage's first bottleneck); 224x224 RGB input, 1000 classes.",
        TV.format("resnet.py: resnet50, Bottleneck"))


def resnet_bottleneck(name, blocks_per_stage, description, source):
    """torchvision's bottleneck ResNet (v1.5 strides) with the given blocks per stage."""
    n = Net(name, description, source, (3, 224, 224))
    n.conv("conv1", 64, 7, stride=2, pad=3, bias=False)
    n.bn("bn1")
    n.relu("relu")
    n.pool("maxpool", 3, 2, pad=1)
    cin = 64
    for stage, (width, blocks, stride) in enumerate(
            zip([64, 128, 256, 512], blocks_per_stage, [1, 2, 2, 2]), start=1):
        for b in range(blocks):
            p = f"layer{stage}.{b}."
            s = stride if b == 0 else 1
            block_in = n.shape
            n.conv(p + "conv1", width, 1, bias=False)
            n.bn(p + "bn1")
            n.relu(p + "relu1")
            n.conv(p + "conv2", width, 3, stride=s, pad=1, bias=False)
            n.bn(p + "bn2")
            n.relu(p + "relu2")
            n.conv(p + "conv3", width * 4, 1, bias=False)
            out = n.bn(p + "bn3")
            if b == 0:
                n.conv(p + "downsample.0", width * 4, 1, stride=s, bias=False, inp=block_in)
                n.bn(p + "downsample.1")
            n.residual_add(p + "add", out)
            n.relu(p + "relu3")
            cin = width * 4
    assert n.shape == (cin, 7, 7)
    n.adaptive_avgpool("avgpool", 1, 1)
    n.flatten_fc("fc", 1000)
    return n


def resnet_deep(depth, blocks_per_stage):
    return resnet_bottleneck(
        f"resnet{depth}", blocks_per_stage,
        f"ResNet-{depth} (He et al. 2016, torchvision's v1.5 bottleneck blocks "
        f"{'-'.join(str(b) for b in blocks_per_stage)} per stage); 224x224 RGB input, 1000 "
        f"classes. Published benchmarks (tf_cnn_benchmarks, Horovod) use this layer list.",
        TV.format(f"resnet.py: resnet{depth}, Bottleneck"))


# --- Inception v3 (torchvision Inception3, no auxiliary classifier) -------------------------


def inception_v3():
    n = Net("inception-v3",
            "Inception v3 (Szegedy et al. 2016) as torchvision's Inception3 with "
            "aux_logits=False (the auxiliary classifier is not listed); BatchNorm after every "
            "convolution; 299x299 RGB input, 1000 classes.",
            TV.format("inception.py: Inception3, InceptionA-E, BasicConv2d"), (3, 299, 299))
    tv_basic_conv(n, "Conv2d_1a_3x3", 32, 3, stride=2)
    tv_basic_conv(n, "Conv2d_2a_3x3", 32, 3)
    tv_basic_conv(n, "Conv2d_2b_3x3", 64, 3, pad=1)
    n.pool("maxpool1", 3, 2)
    tv_basic_conv(n, "Conv2d_3b_1x1", 80, 1)
    tv_basic_conv(n, "Conv2d_4a_3x3", 192, 3)
    n.pool("maxpool2", 3, 2)
    for key, pool_features in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        inception_a(n, key, pool_features)
    inception_b(n, "Mixed_6a")
    for key, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        inception_c(n, key, c7)
    inception_d(n, "Mixed_7a")
    inception_e(n, "Mixed_7b")
    inception_e(n, "Mixed_7c")
    assert n.shape == (2048, 8, 8), n.shape
    n.adaptive_avgpool("avgpool", 1, 1)
    n.dropout("dropout")
    n.flatten_fc("fc", 1000)
    return n


def inception_a(n, p, pool_features):
    inp = n.shape
    o1 = tv_basic_conv(n, p + ".branch1x1", 64, 1)
    tv_basic_conv(n, p + ".branch5x5_1", 48, 1, inp=inp)
    o2 = tv_basic_conv(n, p + ".branch5x5_2", 64, 5, pad=2)
    tv_basic_conv(n, p + ".branch3x3dbl_1", 64, 1, inp=inp)
    tv_basic_conv(n, p + ".branch3x3dbl_2", 96, 3, pad=1)
    o3 = tv_basic_conv(n, p + ".branch3x3dbl_3", 96, 3, pad=1)
    n.pool(p + ".avgpool", 3, 1, pad=1, inp=inp)
    o4 = tv_basic_conv(n, p + ".branch_pool", pool_features, 1)
    n.concat(p + ".concat", [o1, o2, o3, o4])


def inception_b(n, p):
    inp = n.shape
    o1 = tv_basic_conv(n, p + ".branch3x3", 384, 3, stride=2)
    tv_basic_conv(n, p + ".branch3x3dbl_1", 64, 1, inp=inp)
    tv_basic_conv(n, p + ".branch3x3dbl_2", 96, 3, pad=1)
    o2 = tv_basic_conv(n, p + ".branch3x3dbl_3", 96, 3, stride=2)
    o3 = n.pool(p + ".maxpool", 3, 2, inp=inp)
    n.concat(p + ".concat", [o1, o2, o3])


def inception_c(n, p, c7):
    inp = n.shape
    o1 = tv_basic_conv(n, p + ".branch1x1", 192, 1)
    tv_basic_conv(n, p + ".branch7x7_1", c7, 1, inp=inp)
    tv_basic_conv(n, p + ".branch7x7_2", c7, (1, 7), pad=(0, 3))
    o2 = tv_basic_conv(n, p + ".branch7x7_3", 192, (7, 1), pad=(3, 0))
    tv_basic_conv(n, p + ".branch7x7dbl_1", c7, 1, inp=inp)
    tv_basic_conv(n, p + ".branch7x7dbl_2", c7, (7, 1), pad=(3, 0))
    tv_basic_conv(n, p + ".branch7x7dbl_3", c7, (1, 7), pad=(0, 3))
    tv_basic_conv(n, p + ".branch7x7dbl_4", c7, (7, 1), pad=(3, 0))
    o3 = tv_basic_conv(n, p + ".branch7x7dbl_5", 192, (1, 7), pad=(0, 3))
    n.pool(p + ".avgpool", 3, 1, pad=1, inp=inp)
    o4 = tv_basic_conv(n, p + ".branch_pool", 192, 1)
    n.concat(p + ".concat", [o1, o2, o3, o4])


def inception_d(n, p):
    inp = n.shape
    tv_basic_conv(n, p + ".branch3x3_1", 192, 1)
    o1 = tv_basic_conv(n, p + ".branch3x3_2", 320, 3, stride=2)
    tv_basic_conv(n, p + ".branch7x7x3_1", 192, 1, inp=inp)
    tv_basic_conv(n, p + ".branch7x7x3_2", 192, (1, 7), pad=(0, 3))
    tv_basic_conv(n, p + ".branch7x7x3_3", 192, (7, 1), pad=(3, 0))
    o2 = tv_basic_conv(n, p + ".branch7x7x3_4", 192, 3, stride=2)
    o3 = n.pool(p + ".maxpool", 3, 2, inp=inp)
    n.concat(p + ".concat", [o1, o2, o3])


def inception_e(n, p):
    inp = n.shape
    o1 = tv_basic_conv(n, p + ".branch1x1", 320, 1)
    mid = tv_basic_conv(n, p + ".branch3x3_1", 384, 1, inp=inp)
    o2a = tv_basic_conv(n, p + ".branch3x3_2a", 384, (1, 3), pad=(0, 1))
    o2b = tv_basic_conv(n, p + ".branch3x3_2b", 384, (3, 1), pad=(1, 0), inp=mid)
    tv_basic_conv(n, p + ".branch3x3dbl_1", 448, 1, inp=inp)
    mid = tv_basic_conv(n, p + ".branch3x3dbl_2", 384, 3, pad=1)
    o3a = tv_basic_conv(n, p + ".branch3x3dbl_3a", 384, (1, 3), pad=(0, 1))
    o3b = tv_basic_conv(n, p + ".branch3x3dbl_3b", 384, (3, 1), pad=(1, 0), inp=mid)
    n.pool(p + ".avgpool", 3, 1, pad=1, inp=inp)
    o4 = tv_basic_conv(n, p + ".branch_pool", 192, 1)
    n.concat(p + ".concat", [o1, o2a, o2b, o3a, o3b, o4])


# (in, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj): Szegedy et al. 2015, table 1.
INCEPTION = {
    "3a": (192, 64, 96, 128, 16, 32, 32),
    "3b": (256, 128, 128, 192, 32, 96, 64),
    "4a": (480, 192, 96, 208, 16, 48, 64),
    "4b": (512, 160, 112, 224, 24, 64, 64),
    "4c": (512, 128, 128, 256, 24, 64, 64),
    "4d": (512, 112, 144, 288, 32, 64, 64),
    "4e": (528, 256, 160, 320, 32, 128, 128),
    "5a": (832, 256, 160, 320, 32, 128, 128),
    "5b": (832, 384, 192, 384, 48, 128, 128),
}


def tv_basic_conv(n, name, cout, k, stride=1, pad=0, inp=None):
    """torchvision's BasicConv2d: conv without bias, BatchNorm (eps 0.001), ReLU."""
    n.conv(name + ".conv", cout, k, stride=stride, pad=pad, bias=False, inp=inp)
    n.bn(name + ".bn")
    return n.relu(name + ".relu")


def tv_inception(n, key):
    cin, c1, c3r, c3, c5r, c5, pp = INCEPTION[key]
    p = f"inception{key}."
    inp = n.shape
    assert inp[0] == cin, (key, inp)
    o1 = tv_basic_conv(n, p + "branch1", c1, 1)
    tv_basic_conv(n, p + "branch2.0", c3r, 1, inp=inp)
    o2 = tv_basic_conv(n, p + "branch2.1", c3, 3, pad=1)
    tv_basic_conv(n, p + "branch3.0", c5r, 1, inp=inp)
    # torchvision keeps a 3x3 kernel here (a known deviation from the paper's 5x5).
    o3 = tv_basic_conv(n, p + "branch3.1", c5, 3, pad=1)
    n.pool(p + "branch4.0", 3, 1, pad=1, ceil=True, inp=inp)
    o4 = tv_basic_conv(n, p + "branch4.1", pp, 1)
    n.concat(p + "concat", [o1, o2, o3, o4])


def tv_inception_aux(n, name):
    trunk = n.shape
    c, h, w = trunk
    n.add(name + ".avgpool", "pool", [], c * h * w, (c, 4, 4))
    tv_basic_conv(n, name + ".conv", 128, 1)
    n.flatten_fc(name + ".fc1", 1024)
    n.relu(name + ".relu")
    n.dropout(name + ".dropout")
    n.flatten_fc(name + ".fc2", 1000)
    n.shape = trunk  # the trunk continues from the inception output, not from the head


def googlenet(aux):
    name = "googlenet-aux" if aux else "googlenet"
    what = ("with its two auxiliary classifiers (aux1 after inception4a, aux2 after "
            "inception4d; used in training)" if aux else "without the auxiliary classifiers")
    n = Net(name,
            f"GoogLeNet / Inception v1 (Szegedy et al. 2015) as in torchvision, with BatchNorm "
            f"after every convolution, {what}; 224x224 RGB input, 1000 classes.",
            TV.format("googlenet.py: GoogLeNet, BasicConv2d, Inception, InceptionAux"),
            (3, 224, 224))
    tv_basic_conv(n, "conv1", 64, 7, stride=2, pad=3)
    n.pool("maxpool1", 3, 2, ceil=True)
    tv_basic_conv(n, "conv2", 64, 1)
    tv_basic_conv(n, "conv3", 192, 3, pad=1)
    n.pool("maxpool2", 3, 2, ceil=True)
    tv_inception(n, "3a")
    tv_inception(n, "3b")
    n.pool("maxpool3", 3, 2, ceil=True)
    tv_inception(n, "4a")
    if aux:
        tv_inception_aux(n, "aux1")
    tv_inception(n, "4b")
    tv_inception(n, "4c")
    tv_inception(n, "4d")
    if aux:
        tv_inception_aux(n, "aux2")
    tv_inception(n, "4e")
    n.pool("maxpool4", 2, 2, ceil=True)
    tv_inception(n, "5a")
    tv_inception(n, "5b")
    n.adaptive_avgpool("avgpool", 1, 1)
    n.dropout("dropout")
    n.flatten_fc("fc", 1000)
    return n


# --- BVLC Caffe GoogLeNet (B-Caffe) ---------------------------------------------------------


def caffe_conv(n, name, relu_name, cout, k, stride=1, pad=0, inp=None):
    out = n.conv(name, cout, k, stride=stride, pad=pad, inp=inp)
    n.relu(relu_name)
    return out


def caffe_inception(n, key):
    cin, c1, c3r, c3, c5r, c5, pp = INCEPTION[key]
    p = f"inception_{key}/"
    inp = n.shape
    assert inp[0] == cin, (key, inp)
    o1 = caffe_conv(n, p + "1x1", p + "relu_1x1", c1, 1)
    caffe_conv(n, p + "3x3_reduce", p + "relu_3x3_reduce", c3r, 1, inp=inp)
    o2 = caffe_conv(n, p + "3x3", p + "relu_3x3", c3, 3, pad=1)
    caffe_conv(n, p + "5x5_reduce", p + "relu_5x5_reduce", c5r, 1, inp=inp)
    o3 = caffe_conv(n, p + "5x5", p + "relu_5x5", c5, 5, pad=2)
    n.pool(p + "pool", 3, 1, pad=1, caffe=True, inp=inp)
    o4 = caffe_conv(n, p + "pool_proj", p + "relu_pool_proj", pp, 1)
    n.concat(p + "output", [o1, o2, o3, o4])


def caffe_loss_head(n, k):
    trunk = n.shape
    p = f"loss{k}/"
    n.pool(p + "ave_pool", 5, 3, caffe=True)
    caffe_conv(n, p + "conv", p + "relu_conv", 128, 1)
    n.flatten_fc(p + "fc", 1024)
    n.relu(p + "relu_fc")
    n.dropout(p + "drop_fc")
    n.flatten_fc(p + "classifier", 1000)
    n.shape = trunk


def googlenet_caffe():
    n = Net("googlenet-caffe",
            "BVLC GoogLeNet in Caffe with both auxiliary classifiers (loss1, loss2) as trained by "
            "B-Caffe for the MG-WFBP paper (Shi et al.); 224x224 crops, 1000 classes; no "
            "BatchNorm, LRN after conv1 and conv2, 5x5 branches, biases on every convolution. "
            "Its 128 parameter tensors are in Caffe's learnable-parameter order, the param_id "
            "order of B-Caffe's per-layer logs (logdata/tmp*comm.log); those logs report each "
            "tensor's element count rounded up to a multiple of 64 (NVCaffe lp_aligned_count, "
            "align_up<6>), which is why they sum to 13,379,136 while the tensors here hold "
            "13,378,280. Loss layers (SoftmaxWithLoss) are not listed.",
            "BVLC Caffe models/bvlc_googlenet/train_val.prototxt as copied in shyhuai/B-Caffe "
            "benchmarks/cnn/googlenet/googlenet.prototxt (commit 1e8a70d); parameter order "
            "checked against B-Caffe logdata/tmpcomm.log",
            (3, 224, 224))
    caffe_conv(n, "conv1/7x7_s2", "conv1/relu_7x7", 64, 7, stride=2, pad=3)
    n.pool("pool1/3x3_s2", 3, 2, caffe=True)
    n.lrn("pool1/norm1", 5)
    caffe_conv(n, "conv2/3x3_reduce", "conv2/relu_3x3_reduce", 64, 1)
    caffe_conv(n, "conv2/3x3", "conv2/relu_3x3", 192, 3, pad=1)
    n.lrn("conv2/norm2", 5)
    n.pool("pool2/3x3_s2", 3, 2, caffe=True)
    caffe_inception(n, "3a")
    caffe_inception(n, "3b")
    n.pool("pool3/3x3_s2", 3, 2, caffe=True)
    caffe_inception(n, "4a")
    caffe_loss_head(n, 1)
    caffe_inception(n, "4b")
    caffe_inception(n, "4c")
    caffe_inception(n, "4d")
    caffe_loss_head(n, 2)
    caffe_inception(n, "4e")
    n.pool("pool4/3x3_s2", 3, 2, caffe=True)
    caffe_inception(n, "5a")
    caffe_inception(n, "5b")
    n.pool("pool5/7x7_s1", 7, 1, caffe=True)
    n.dropout("pool5/drop_7x7_s1")
    n.flatten_fc("loss3/classifier", 1000)
    return n


# --- BERT (Hugging Face BertModel) ---------------------------------------------------------


def bert(name, hidden, num_layers, heads, intermediate, seq=128, vocab=30522, max_pos=512,
         type_vocab=2):
    label = "base" if hidden == 768 else "large"
    n = Net(name,
            f"BERT-{label} encoder (Devlin et al. 2019) as Hugging Face BertModel with its "
            f"pooler, no task head: {num_layers} layers, hidden {hidden}, {heads} heads, "
            f"intermediate {intermediate}, vocabulary {vocab}. FLOPs and activations are for "
            f"one sample of sequence length {seq} (input_shape is the token ids); dropout "
            f"layers are not listed.",
            "Hugging Face transformers models/bert/modeling_bert.py (BertModel, "
            f"BertEmbeddings, BertLayer, BertPooler) with the bert-{label}-uncased config",
            (seq,))
    t = (seq, hidden)

    def fc(lname, fin, fout, out_shape=None):
        return n.add(lname, "fc", [("weight", (fout, fin)), ("bias", (fout,))],
                     2 * fin * fout * seq, out_shape or (seq, fout))

    n.add("embeddings.word_embeddings", "embedding", [("weight", (vocab, hidden))], 0, t)
    n.add("embeddings.token_type_embeddings", "embedding", [("weight", (type_vocab, hidden))],
          0, t)
    n.add("embeddings.position_embeddings", "embedding", [("weight", (max_pos, hidden))], 0, t)
    n.add("embeddings.add", "add", [], 2 * ADD_FLOPS * prod(t), t)
    n.add("embeddings.LayerNorm", "layernorm", [("weight", (hidden,)), ("bias", (hidden,))],
          LAYERNORM_FLOPS * prod(t), t)
    for i in range(num_layers):
        p = f"encoder.layer.{i}."
        fc(p + "attention.self.query", hidden, hidden)
        fc(p + "attention.self.key", hidden, hidden)
        fc(p + "attention.self.value", hidden, hidden)
        # Scores Q K^T, scaling, softmax, then the weighted sum of V, for all heads.
        scores = heads * seq * seq
        core = 2 * seq * seq * hidden * 2 + scores * (1 + SOFTMAX_FLOPS)
        n.add(p + "attention.self", "attention", [], core, t)
        fc(p + "attention.output.dense", hidden, hidden)
        n.add(p + "attention.output.add", "add", [], ADD_FLOPS * prod(t), t)
        n.add(p + "attention.output.LayerNorm", "layernorm",
              [("weight", (hidden,)), ("bias", (hidden,))], LAYERNORM_FLOPS * prod(t), t)
        fc(p + "intermediate.dense", hidden, intermediate)
        n.add(p + "intermediate.gelu", "gelu", [], GELU_FLOPS * seq * intermediate,
              (seq, intermediate))
        fc(p + "output.dense", intermediate, hidden)
        n.add(p + "output.add", "add", [], ADD_FLOPS * prod(t), t)
        n.add(p + "output.LayerNorm", "layernorm", [("weight", (hidden,)), ("bias", (hidden,))],
              LAYERNORM_FLOPS * prod(t), t)
    # The pooler reads only the first ([CLS]) token.
    n.add("pooler.dense", "fc", [("weight", (hidden, hidden)), ("bias", (hidden,))],
          2 * hidden * hidden, (hidden,))
    n.add("pooler.activation", "tanh", [], TANH_FLOPS * hidden, (hidden,))
    return n


# --- fully connected stacks for Fashion-MNIST ----------------------------------------------


def mlp(name, widths, what):
    n = Net(name,
            f"{what}: fully connected {'-'.join(str(w) for w in widths)} with ReLU between "
            f"layers, for Fashion-MNIST (28x28 grey images flattened to 784, 10 classes); the "
            f"CPU training runtime trains it from this file.",
            "dagsgd (defined here; Fashion-MNIST: Xiao, Rasul, Vollgraf 2017)", (widths[0],))
    for i, w in enumerate(widths[1:], start=1):
        n.flatten_fc(f"fc{i}", w)
        if i < len(widths) - 1:
            n.relu(f"relu{i}")
    return n


# --- extreme classification (SLIDE) ---------------------------------------------------------


def slide_amazon670k(hidden=1024, nonzeros=75):
    """Amazon-670K: 135,909 sparse bag-of-words features, 670,091 labels (Extreme Classification
    Repository). The input is sparse, so the first layer's forward touches only the weight rows
    of the ~75 non-zero features (0.055% density); its gradient is still dense for an allreduce.
    """
    features, labels = 135909, 670091
    n = Net("slide-amazon670k",
            f"Extreme-classification network in the shape SLIDE and Distributed SLIDE train: "
            f"fully connected {features}-{hidden}-{labels} (sparse input with about {nonzeros} "
            f"non-zero features per sample, ReLU hidden layer, softmax over labels; the output "
            f"layer is counted dense). The hidden width {hidden} (SLIDE uses 128) makes it a "
            f"{(features * hidden + hidden + hidden * labels + labels) / 1e6:.0f}M-parameter model, "
            f"the 'close to a billion parameter' scale of Distributed SLIDE.",
            "Amazon-670K dimensions and feature density: Chen et al., SLIDE, MLSys 2020, Table 1 "
            "(Extreme Classification Repository, Bhatia et al.); model scale: Yan, Meisburger, "
            "Medini, Shrivastava, Distributed SLIDE, arXiv:2201.12667 (2022), abstract",
            (features,))
    # "sparse_fc": a fully connected layer on a sparse input, whose FLOPs follow the non-zeros
    # (2 * nonzeros * out), not the weight shape as a dense "fc" does.
    n.add("fc1", "sparse_fc", [("weight", (hidden, features)), ("bias", (hidden,))],
          2 * nonzeros * hidden, (hidden,))
    n.relu("relu1")
    n.flatten_fc("fc2", labels)
    n.add("softmax", "softmax", [], SOFTMAX_FLOPS * labels, (labels,))
    return n


def all_networks():
    return [
        alexnet(),
        googlenet(aux=False),
        googlenet(aux=True),
        googlenet_caffe(),
        resnet50(),
        resnet_deep(101, [3, 4, 23, 3]),
        resnet_deep(152, [3, 8, 36, 3]),
        inception_v3(),
        vgg16(),
        bert("bert-base", 768, 12, 12, 3072),
        bert("bert-large", 1024, 24, 16, 4096),
        mlp("fc-wide", [784, 4096, 4096, 4096, 10],
            "A wide multilayer perceptron, big enough that gradient traffic matters"),
        mlp("fc-small", [784, 256, 128, 10], "A small multilayer perceptron for quick tests"),
        slide_amazon670k(),
    ]


def render(n):
    """Top-level keys in a fixed order with 2-space indent; one layer object per line."""
    dump = lambda v: json.dumps(v, ensure_ascii=False)  # noqa: E731
    lines = ["{"]
    lines.append(f'  "name": {dump(n.name)},')
    lines.append(f'  "description": {dump(n.description)},')
    lines.append(f'  "source": {dump(n.source)},')
    lines.append(f'  "input_shape": {dump(n.input_shape)},')
    lines.append('  "layers": [')
    for i, layer in enumerate(n.layers):
        sep = "," if i + 1 < len(n.layers) else ""
        lines.append("    " + dump(layer) + sep)
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(root, "datasets", "networks"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    stale = []
    if not args.check:
        os.makedirs(args.out, exist_ok=True)
    for n in all_networks():
        text = render(n)
        path = os.path.join(args.out, n.name + ".json")
        params = sum(prod(p["shape"]) for layer in n.layers for p in layer["params"])
        flops = sum(layer["forward_flops"] for layer in n.layers)
        tensors = sum(len(layer["params"]) for layer in n.layers)
        print(f"{n.name:16s} {len(n.layers):4d} layers {tensors:4d} tensors "
              f"{params:12,d} params {flops / 1e9:9.3f} GFLOP/sample")
        if args.check:
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(path)
            except OSError:
                stale.append(path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
