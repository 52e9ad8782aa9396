"""Moré and Thuente's trial-interval update (ACM TOMS 20(3), 1994, section 4): where the
next trial step of their line search goes (:mod:`crfkit.optim.linesearch`).

The interval's ends are ``stx`` (the step with the lowest value so far, with its value
``fx`` and slope ``gx``) and ``sty`` (the other end). Once a trial is found with a higher
value than ``stx``'s, or a slope of the other sign, the interval brackets a minimiser
(``bracketed``); before that it grows, each trial between 1.1 and 4 times farther than
the last from ``stx``. The new trial interpolates: the minimiser of the cubic through
both steps' values and slopes, of the quadratic through the values and one slope, or of
the secant of the slopes, chosen by the four cases of the paper.
"""

from __future__ import annotations

import math

EXTRAPOLATE_MIN, EXTRAPOLATE_MAX = 1.1, 4.0


class Bracket:
    """The interval of uncertainty of a line search that starts at step 0; ``stmin`` and
    ``stmax`` limit the next trial."""

    def __init__(self, f0: float, slope0: float, first_step: float) -> None:
        self.stx = self.sty = self.stmin = 0.0
        self.fx = self.fy = f0
        self.gx = self.gy = slope0
        self.stmax = first_step + EXTRAPOLATE_MAX * first_step
        self.bracketed = False

    def stuck(self, step: float, xtol: float) -> bool:
        """No progress is possible: the trial fell on the interval's edge, or the interval
        is narrower than the arithmetic's precision ``xtol``."""
        return self.bracketed and (step <= self.stmin or step >= self.stmax
                                   or self.stmax - self.stmin <= xtol * self.stmax)

    def clamp(self, step: float, min_step: float, max_step: float, xtol: float) -> float:
        """The trial's limits from the interval; the step within them and [min_step,
        max_step]; ``stx`` where the interval leaves no room."""
        if self.bracketed:
            self.stmin, self.stmax = min(self.stx, self.sty), max(self.stx, self.sty)
        else:
            self.stmin = step + EXTRAPOLATE_MIN * (step - self.stx)
            self.stmax = step + EXTRAPOLATE_MAX * (step - self.stx)
        step = min(max(step, min_step), max_step)
        if self.bracketed and (step <= self.stmin or step >= self.stmax
                               or self.stmax - self.stmin <= xtol * self.stmax):
            step = self.stx
        return step


def next_trial(b: Bracket, stp: float, fp: float, dp: float, shift: float = 0.0) -> float:
    """Update ``b`` with the trial ``stp`` (value ``fp``, slope ``dp``) and return the next
    trial. ``shift``: interpolate ``phi(a) - shift * a`` instead (the search's stage 1)."""
    fx, gx = b.fx - b.stx * shift, b.gx - shift
    fy, gy = b.fy - b.sty * shift, b.gy - shift
    fp, dp = fp - stp * shift, dp - shift
    same_sign = dp * math.copysign(1.0, gx) > 0.0 if gx != 0.0 else dp > 0.0
    if fp > fx:  # case 1: higher value, the minimiser is bracketed
        new = _higher_value(b.stx, fx, gx, stp, fp, dp)
        b.bracketed = True
    elif not same_sign:  # case 2: the slopes differ in sign, bracketed
        new = _sign_change(b.stx, fx, gx, stp, fp, dp)
        b.bracketed = True
    elif abs(dp) < abs(gx):  # case 3: the slope's magnitude decreases
        new = _flatter(b, fx, gx, stp, fp, dp)
    else:  # case 4: the slope does not decrease
        new = _steeper(b, fy, gy, stp, fp, dp)
    if fp > fx:
        b.sty, fy, gy = stp, fp, dp
    else:
        if not same_sign:
            b.sty, fy, gy = b.stx, fx, gx
        b.stx, fx, gx = stp, fp, dp
    b.fx, b.gx = fx + b.stx * shift, gx + shift
    b.fy, b.gy = fy + b.sty * shift, gy + shift
    return new


def _cubic_gamma(theta: float, d1: float, d2: float, clip: bool = False) -> float:
    """sqrt(theta^2 - d1 d2), scaled against overflow; 0 where negative if ``clip``."""
    s = max(abs(theta), abs(d1), abs(d2))
    inside = (theta / s) ** 2 - (d1 / s) * (d2 / s)
    return s * math.sqrt(max(inside, 0.0) if clip else inside)


def _higher_value(stx: float, fx: float, gx: float, stp: float, fp: float, dp: float) -> float:
    theta = 3.0 * (fx - fp) / (stp - stx) + gx + dp
    gamma = _cubic_gamma(theta, gx, dp)
    if stp < stx:
        gamma = -gamma
    p = (gamma - gx) + theta
    q = ((gamma - gx) + gamma) + dp
    cubic = stx + (p / q) * (stp - stx)
    quadratic = stx + ((gx / ((fx - fp) / (stp - stx) + gx)) / 2.0) * (stp - stx)
    if abs(cubic - stx) < abs(quadratic - stx):
        return cubic
    return cubic + (quadratic - cubic) / 2.0


def _sign_change(stx: float, fx: float, gx: float, stp: float, fp: float, dp: float) -> float:
    theta = 3.0 * (fx - fp) / (stp - stx) + gx + dp
    gamma = _cubic_gamma(theta, gx, dp)
    if stp > stx:
        gamma = -gamma
    p = (gamma - dp) + theta
    q = ((gamma - dp) + gamma) + gx
    cubic = stp + (p / q) * (stx - stp)
    secant = stp + (dp / (dp - gx)) * (stx - stp)
    return cubic if abs(cubic - stp) > abs(secant - stp) else secant


def _flatter(b: Bracket, fx: float, gx: float, stp: float, fp: float, dp: float) -> float:
    theta = 3.0 * (fx - fp) / (stp - b.stx) + gx + dp
    gamma = _cubic_gamma(theta, gx, dp, clip=True)
    if stp > b.stx:
        gamma = -gamma
    p = (gamma - dp) + theta
    q = (gamma + (gx - dp)) + gamma
    r = p / q
    if r < 0.0 and gamma != 0.0:
        cubic = stp + r * (b.stx - stp)
    else:  # the cubic has no minimiser beyond stp: go to the limit
        cubic = b.stmax if stp > b.stx else b.stmin
    secant = stp + (dp / (dp - gx)) * (b.stx - stp)
    if b.bracketed:
        new = cubic if abs(cubic - stp) < abs(secant - stp) else secant
        reach = stp + 0.66 * (b.sty - stp)  # stay well inside the bracket
        return min(reach, new) if stp > b.stx else max(reach, new)
    new = cubic if abs(cubic - stp) > abs(secant - stp) else secant
    return min(max(new, b.stmin), b.stmax)


def _steeper(b: Bracket, fy: float, gy: float, stp: float, fp: float, dp: float) -> float:
    if not b.bracketed:
        return b.stmax if stp > b.stx else b.stmin
    theta = 3.0 * (fp - fy) / (b.sty - stp) + gy + dp
    gamma = _cubic_gamma(theta, gy, dp)
    if stp > b.sty:
        gamma = -gamma
    p = (gamma - dp) + theta
    q = ((gamma - dp) + gamma) + gy
    return stp + (p / q) * (b.sty - stp)
