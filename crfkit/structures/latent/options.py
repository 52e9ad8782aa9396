"""The latent-dynamic CRF's command-line options (training and labelling), declared once."""

from __future__ import annotations

import click

from crfkit.options import Option

DECODE_MODES = ("states", "labels")
STARTS = ("successors", "random")

LATENT = Option(
    "latent", ("--latent",), None,
    "Hidden states per label (a latent-dynamic crf; 1: a plain crf). Label sets (? and A|B "
    "in the label column) train without it, as with --latent 1. The objective is "
    "non-convex for K > 1: see --latent-start  [default: 1]", int,
    "K", check=lambda v: None if v is None or v >= 1 else f"--latent must be >= 1, got {v}")
LATENT_START = Option(
    "latent_start", ("--latent-start",), None,
    "latent: how a label's states are told apart at the start. successors: each token's "
    "state is first set by the label that follows it (its label's most frequent "
    "successors: a convex training), then left free; random: a small seeded random start "
    "(--latent-seed)  [default: successors]", click.Choice(list(STARTS)),
    check=lambda v: None if v in (None, *STARTS) else (
        f"unknown --latent-start {v!r} (expected {' or '.join(STARTS)})"))
LATENT_SEED = Option(
    "latent_seed", ("--latent-seed",), 0,
    "latent: the seed of --latent-start random.", int,
    show_default=True)
LATENT_DECODE = Option(
    "latent_decode", ("--latent-decode",), None,
    "latent: label with the best state path (states) or the best label path summing over "
    "its states (labels: exact, slower)  [default: states]", click.Choice(list(DECODE_MODES)),
    check=lambda v: None if v in (None, *DECODE_MODES) else (
        f"unknown --latent-decode {v!r} (expected {' or '.join(DECODE_MODES)})"))

TRAIN_OPTIONS = (LATENT, LATENT_START, LATENT_SEED)
LABEL_OPTIONS = (LATENT_DECODE,)
