"""One array flavour for the kernels that both training and labelling call.

Numba compiles a kernel once per argument type, and a read-only array is a
different type from a writable one. A loaded model's arrays are read-only
(:mod:`crfkit.io.fileformat`: a model must not be mutated), while training
hands the same kernels writable arrays, so without this every decoder kernel
would be compiled twice. The entry points shared by both pass read-only views.
"""

from __future__ import annotations

import numpy as np

from crfkit.space import SpaceArrays


def read_only(array: np.ndarray | None) -> np.ndarray | None:
    """A read-only view of ``array`` (the array itself when it already is; None stays None)."""
    if array is None or not array.flags.writeable:
        return array
    view = array.view()
    view.flags.writeable = False
    return view


def read_only_space(space: SpaceArrays) -> SpaceArrays:
    """``space`` with read-only views of its feature lists."""
    return space._replace(u_ptr=read_only(space.u_ptr), u_lab=read_only(space.u_lab),
                          b_ptr=read_only(space.b_ptr), b_prev=read_only(space.b_prev),
                          b_cur=read_only(space.b_cur))
