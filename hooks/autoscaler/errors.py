"""The errors of the autoscaling decision: the HRA cannot be sized as configured."""

from __future__ import annotations


class AutoscalingError(ValueError):
    """An invalid HRA (or scale target) for autoscaling. The message is ARC's where ARC has one."""


class InvalidSpecError(AutoscalingError):
    """Spec values ARC accepts but then misuses (a negative maxReplicas, min above max): the
    answer would be wrong, so none is given. The message names fields, never their values."""
