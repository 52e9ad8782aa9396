"""The latent-dynamic CRF's command-line options (training and labelling), declared once."""

from __future__ import annotations

import click

from crfkit.options import Option

DECODE_MODES = ("states", "labels")

LATENT = Option(
    "latent", ("--latent",), None,
    "Hidden states per label (a latent-dynamic crf; 1: a plain crf). Label sets (? and A|B "
    "in the label column) train without it, as with --latent 1. The objective is "
    "non-convex for K > 1: a run is reproducible for its --latent-seed  [default: 1]", int,
    "K", check=lambda v: None if v is None or v >= 1 else f"--latent must be >= 1, got {v}")
LATENT_SEED = Option(
    "latent_seed", ("--latent-seed",), 0,
    "latent: the seed of the small random start that separates a label's states.", int,
    show_default=True)
LATENT_DECODE = Option(
    "latent_decode", ("--latent-decode",), None,
    "latent: label with the best state path (states) or the best label path summing over "
    "its states (labels: exact, slower)  [default: states]", click.Choice(list(DECODE_MODES)),
    check=lambda v: None if v in (None, *DECODE_MODES) else (
        f"unknown --latent-decode {v!r} (expected {' or '.join(DECODE_MODES)})"))

TRAIN_OPTIONS = (LATENT, LATENT_SEED)
LABEL_OPTIONS = (LATENT_DECODE,)
