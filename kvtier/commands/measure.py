"""``kvtier measure --out FILE``: measure this machine and write an assumption set.

The measuring is :mod:`kvtier.inputs.probe`; this module registers the command and runs it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kvtier.inputs import probe
from kvtier.inputs.models import load_model


def _out_file(text: str) -> Path:
    """``--out`` as a path; an empty one (which ``Path`` reads as the current directory) is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give the assumption file to write, not an empty path")
    return Path(text)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``measure --out FILE [--force] [--model M] [--device D] [--quick] [--layers N]`` on ``subparsers``."""
    p = subparsers.add_parser(
        "measure",
        help="measure this machine (copies, memory, matrix rate, forward passes) and write an assumption set",
        description="Time host copies, device memory, a matrix product and forward passes of a model's shapes"
        " with random weights on this machine (a CUDA GPU through PyTorch, else the CPU through numpy), and write"
        " an assumption set for `kvtier build --assumptions`. The file is written atomically; an existing file"
        " is replaced only if kvtier measure wrote it (or with --force).",
    )
    p.add_argument("--out", required=True, type=_out_file, metavar="FILE", help="the assumption set to write (YAML)")
    p.add_argument("--force", action="store_true", help="replace FILE even if kvtier measure did not write it")
    p.add_argument("--model", default="llama-3-70b", help="model preset or config.json path (default llama-3-70b)")
    p.add_argument("--device", default="auto", choices=probe.DEVICES, help="where to measure (default: auto)")
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"fewer sizes, tokens and repetitions, and at most {probe.QUICK_LAYERS} layers (what fits), scaled to all",
    )
    p.add_argument("--layers", type=int, metavar="N", help="build N layers and scale the passes to all of them")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Measure and write ``args.out``; return 0 (errors raise :class:`~kvtier.errors.KvtierError`).

    Everything that can be refused is refused before the first measurement: the output, the
    model, the device and the layer count.
    """
    force = bool(getattr(args, "force", False))
    probe.check_out(args.out, force)
    model = probe.resolve_model(args.model)
    spec = load_model(model)
    probe.check_model(spec)
    backend = probe.pick_backend(args.device)
    probe.plan_layers(spec, backend, args.layers, args.quick)
    probe.log(f"measuring on {backend.what}")
    result = probe.measure(model, backend, quick=args.quick, layers=args.layers)
    probe.write_set(result, args.out, force)
    probe.log(f"wrote {args.out}; rebuild the book with: kvtier build --assumptions {args.out}")
    return 0
