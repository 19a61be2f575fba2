"""The classifiers (MONAI DenseNet and ResNet, 2D or 3D), local pretrained weights, FLOP counts."""

from __future__ import annotations

from collections.abc import Callable

import torch
from monai.networks import nets
from torch import nn

from .config import MODEL_NAMES, UsageError


def _densenet(
    blocks: tuple[int, ...], growth: int = 32, init: int = 64
) -> Callable[[int, int, int], nn.Module]:
    def build(dims: int, in_channels: int, classes: int) -> nn.Module:
        return nets.DenseNet(
            spatial_dims=dims,
            in_channels=in_channels,
            out_channels=classes,
            init_features=init,
            growth_rate=growth,
            block_config=blocks,
        )

    return build


def _resnet(factory: Callable[..., nn.Module]) -> Callable[[int, int, int], nn.Module]:
    def build(dims: int, in_channels: int, classes: int) -> nn.Module:
        # MONAI's stem defaults to stride 1 (for small 3D patches); the standard ResNet stem (He et
        # al.; the published ImageNet throughputs) has stride 2, which costs 4x fewer FLOPs in 2D.
        return factory(
            spatial_dims=dims, n_input_channels=in_channels, num_classes=classes, conv1_t_stride=2
        )

    return build


# Block layouts of Huang et al. (2017). MONAI ships 121/169/201/264; 161 (the CLAIRE grid's
# fourth DenseNet) is the same DenseNet class with 96 initial features and growth rate 48.
BUILDERS: dict[str, Callable[[int, int, int], nn.Module]] = {
    "densenet121": _densenet((6, 12, 24, 16)),
    "densenet161": _densenet((6, 12, 36, 24), growth=48, init=96),
    "densenet169": _densenet((6, 12, 32, 32)),
    "densenet201": _densenet((6, 12, 48, 32)),
    "resnet18": _resnet(nets.resnet18),
    "resnet50": _resnet(nets.resnet50),
}
assert tuple(BUILDERS) == MODEL_NAMES


def build_model(
    name: str, dims: int = 2, in_channels: int = 1, classes: int = 2, pretrained: str | None = None
) -> nn.Module:
    """A freshly initialised model (seed torch first for reproducible weights), optionally with
    local pretrained weights loaded where names and shapes match (the input stem and classifier
    head are left as initialised when they differ, e.g. 3-channel ImageNet weights)."""
    if name not in BUILDERS:
        raise UsageError(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
    model = BUILDERS[name](dims, in_channels, classes)
    if pretrained:
        load_pretrained(model, pretrained)
    return model


def load_pretrained(model: nn.Module, path: str) -> list[str]:
    """Copy matching tensors from a local state dict (or a checkpoint holding 'model'); returns
    the names skipped. Raises UsageError when nothing matches, which means the wrong file."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # any unreadable file is the user's to fix
        raise UsageError(f"cannot read pretrained weights {path}: {exc}") from None
    state = state.get("model", state) if isinstance(state, dict) else state
    own = model.state_dict()
    usable = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    if not usable:
        raise UsageError(f"no tensor in {path} matches the model's names and shapes")
    model.load_state_dict(usable, strict=False)
    return sorted(set(own) - set(usable))


def flops_per_sample(model: nn.Module, input_shape: tuple[int, ...]) -> int:
    """Forward FLOPs for one sample (2 x multiply-accumulates of convolutions and linear layers,
    which dominate these networks); training costs about 3x this (forward + backward)."""
    total = 0

    def conv_hook(
        module: nn.Conv1d | nn.Conv2d | nn.Conv3d, _inp: tuple, out: torch.Tensor
    ) -> None:
        nonlocal total
        kernel = module.weight[0].numel()  # in_channels/groups x kernel volume
        total += 2 * kernel * out[0].numel()

    def linear_hook(module: nn.Linear, _inp: tuple, out: torch.Tensor) -> None:
        nonlocal total
        total += 2 * module.in_features * out[0].numel()

    hooks = []
    for m in model.modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            hooks.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(linear_hook))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(torch.zeros(1, *input_shape, device=next(model.parameters()).device))
    finally:
        model.train(was_training)
        for h in hooks:
            h.remove()
    return total
