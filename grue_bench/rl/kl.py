"""KL penalty controllers: beta weights the per-token penalty -beta * (log pi - log pi_ref)."""

from __future__ import annotations


class FixedKLController:
    """beta never changes."""

    def __init__(self, coeff: float) -> None:
        self.value = coeff

    def update(self, current_kl: float) -> float:
        return self.value


class AdaptiveKLController:
    """Proportional control of beta towards a target KL (Ziegler et al. 2019, as in RL4LMs).

    e = clip((KL - target) / target, -0.2, 0.2);  beta <- beta * (1 + rate * e).
    """

    def __init__(self, coeff: float, target_kl: float, rate: float = 0.1) -> None:
        self.value = coeff
        self.target = target_kl
        self.rate = rate

    def update(self, current_kl: float) -> float:
        error = min(max((current_kl - self.target) / self.target, -0.2), 0.2)
        self.value *= 1 + self.rate * error
        return self.value


def make_kl_controller(coeff: float, target_kl: float | None, rate: float = 0.1):
    """Adaptive when a target is given, else fixed."""
    if target_kl is None:
        return FixedKLController(coeff)
    return AdaptiveKLController(coeff, target_kl, rate)
