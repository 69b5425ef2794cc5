"""Download and unpack the pinned real-world corpus used by the benchmarks.

The corpus lives in a cache outside the repository (it is tens of MB of
third-party code and must never be committed):

    $AMPLINT_BENCH_CACHE            (default ~/.cache/amplint-bench)
        wheels/                     what `pip download` fetched
        src/NAME-VER/               each archive unpacked

Usage:
    python bench/corpus.py [--set speed|accuracy|round2|all] [--counts]

Prints one prepared directory per line, so other scripts (and people) can
pipe it. Re-running is cheap: packages already unpacked are skipped.
Stdlib only, so it runs from any interpreter that has pip.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ARCHIVE_SUFFIXES = (".whl", ".tar.gz", ".zip")

# Exact pins so that every benchmark and accuracy review sees the same bytes.
# The speed set is the one the performance targets are stated against.
SPEED = {
    "transformers": "5.24.0",
    "timm": "1.0.31",
    "ultralytics": "8.4.190",
}

# Packages with real AMP training loops (trainers, engines, loss scalers),
# reviewed by hand for false positives / negatives. detectron2 is not on PyPI.
ACCURACY_EXTRA = {
    "accelerate": "1.15.0",
    "lightning": "2.6.6",
    "open_clip_torch": "3.3.0",
    "diffusers": "0.42.1",
    "mmengine": "0.10.7",
    "mmdet": "3.3.0",
    "yolov5": "7.0.14",
    "deepspeed": "0.19.8",
    "pytorch-ignite": "0.5.5",
    "mosaicml": "0.32.1",
    "speechbrain": "1.1.2",
}
# Round 2 (docs/accuracy.md, "Review round 2"): libraries and toolkits with
# hand-written AMP training loops, many in releases from before the torch.amp
# migration (torch.cuda.amp.GradScaler / autocast), so that the deprecated
# spellings, version fallbacks and older loop shapes are all seen. A list, not
# a dict: two releases of one package may both be pinned.
ROUND2 = [
    ("timm", "0.4.12"),                      # NativeScaler on torch.cuda.amp
    ("timm", "0.6.13"),
    ("transformers", "4.26.1"),              # Trainer with torch.cuda.amp.GradScaler
    ("pytorch-lightning", "1.5.10"),         # NativeMixedPrecisionPlugin
    ("pytorch-lightning", "1.9.5"),
    ("accelerate", "0.20.3"),
    ("ultralytics", "8.0.100"),              # BaseTrainer on torch.cuda.amp
    ("yolov5", "6.2.3"),
    ("mmcv", "1.7.2"),                       # sdist; Fp16OptimizerHook, fp16_utils
    ("mmdet", "2.28.2"),
    ("fairseq", "0.12.2"),                   # sdist; AMPOptimizer, its own fp16 optimizers
    ("espnet", "202402"),                    # espnet2 Trainer
    ("speechbrain", "0.5.16"),
    ("nemo_toolkit", "1.23.0"),
    ("pytorch-ignite", "0.4.13"),
    ("catalyst", "22.4"),
    ("fastai", "2.7.14"),                    # MixedPrecision callback
    ("mosaicml", "0.17.2"),
    ("lightly", "1.4.25"),
    ("pytorch-metric-learning", "2.3.0"),
    ("kornia", "0.7.0"),
    ("monai", "1.3.0"),                      # SupervisedTrainer(amp=True)
    ("torchtune", "0.3.1"),
    ("open_clip_torch", "2.20.0"),
    ("segmentation-models-pytorch", "0.3.3"),
    ("diffusers", "0.21.4"),
    ("peft", "0.6.2"),
    ("trl", "0.7.11"),
    ("sentence-transformers", "2.2.2"),      # sdist; SentenceTransformer.fit
    ("simpletransformers", "0.64.3"),        # one hand-written loop per task model
    ("allennlp", "2.10.1"),                  # GradientDescentTrainer
    ("nnunetv2", "2.2.1"),                   # sdist; nnUNetTrainer
    ("classy_vision", "0.6.0"),
    ("salesforce-lavis", "1.0.2"),           # runners
    ("super-gradients", "3.7.1"),            # sg_trainer
    ("ludwig", "0.8.6"),                     # sdist
    ("flair", "0.13.1"),
    ("audiocraft", "1.3.0"),                 # sdist; solvers
    ("pytorch-pfn-extras", "0.7.6"),         # sdist
    ("optimum", "1.16.2"),
    ("funasr", "1.0.27"),
    ("rfdetr", "1.2.1"),                     # DETR-style engine
    ("torchdistill", "1.0.0"),
    ("pykeen", "1.10.2"),
]
# Not on the registry: detectron2, yolox. The torchvision references and the
# example training scripts of diffusers / transformers are in neither wheel
# nor sdist.

# pip must build an sdist's metadata to download it; these old setup.py files
# need help for that (nothing is compiled and nothing is installed).
SDIST_BUILD = {
    # setup.py imports pkg_resources, which setuptools >= 70 no longer ships.
    "mmcv": {"build_constraints": ["setuptools<70"]},
    # Its build dependencies pin numpy<1.20, which does not build on Python
    # 3.11: use this interpreter's setuptools, numpy and torch instead.
    "fairseq": {"no_build_isolation": True},
}

Pins = list[tuple[str, str]]

SETS: dict[str, Pins] = {
    "speed": list(SPEED.items()),
    "accuracy": [*SPEED.items(), *ACCURACY_EXTRA.items()],
    "round2": ROUND2,
}
SETS["all"] = list(dict.fromkeys([*SETS["accuracy"], *SETS["round2"]]))


def cache_dir() -> Path:
    return Path(os.environ.get("AMPLINT_BENCH_CACHE", "~/.cache/amplint-bench")).expanduser()


def src_dir(name: str, version: str) -> Path:
    return cache_dir() / "src" / f"{name}-{version}"


def corpus_dirs(set_name: str) -> list[Path]:
    """The unpacked directories of a set, without downloading anything."""
    return [src_dir(n, v) for n, v in SETS[set_name]]


def _normalise(text: str) -> str:
    # PEP 503 style: archive names spell "sentence-transformers" as
    # "sentence_transformers" (wheels) or keep the dashes (old sdists).
    return re.sub(r"[-_.]+", "_", text).lower()


def _find_archive(wheels: Path, name: str, version: str) -> Path | None:
    # The trailing "_" keeps timm 0.4.1 from matching timm-0.4.12's archive.
    wanted = f"{_normalise(name)}_{_normalise(version)}_"
    for path in sorted(wheels.iterdir()):
        if _normalise(path.name).startswith(wanted) and path.name.endswith(ARCHIVE_SUFFIXES):
            return path
    return None


def _pip_download(name: str, version: str, wheels: Path, binary: bool) -> bool:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
           "--disable-pip-version-check", "-d", str(wheels), f"{name}=={version}"]
    env = None
    # Prefer the wheel: it is exactly the installed source tree, no build
    # step. Sdist only when no wheel exists (e.g. deepspeed). pip still builds
    # the sdist's metadata, so only this package is forced to source: its
    # build dependencies may come as wheels (":all:" would compile setuptools).
    if binary:
        cmd += ["--only-binary=:all:"]
    else:
        cmd += [f"--no-binary={name}"]
        build = SDIST_BUILD.get(name, {})
        if build.get("no_build_isolation"):
            cmd += ["--no-build-isolation"]
        if build.get("build_constraints"):
            # PIP_CONSTRAINT reaches the pip that fills the isolated build env.
            constraints = wheels / f"{name}-build-constraints.txt"
            constraints.write_text("\n".join(build["build_constraints"]) + "\n", encoding="utf-8")
            env = {**os.environ, "PIP_CONSTRAINT": str(constraints)}
    proc = subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    return proc.returncode == 0


def download(name: str, version: str) -> Path:
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    archive = _find_archive(wheels, name, version)
    if archive is None:
        downloaded = (_pip_download(name, version, wheels, binary=True)
                      or _pip_download(name, version, wheels, binary=False))
        if not downloaded:
            raise RuntimeError(f"could not download {name}=={version}")
        archive = _find_archive(wheels, name, version)
    if archive is None:
        raise RuntimeError(f"downloaded {name}=={version} but found no archive in {wheels}")
    return archive


def _safe_members_zip(zf: zipfile.ZipFile, dest: Path):
    for info in zf.infolist():
        target = (dest / info.filename).resolve()
        if dest.resolve() in target.parents or target == dest.resolve():
            yield info


def unpack(archive: Path, dest: Path) -> None:
    # Unpack into a temporary sibling and rename, so an interrupted run never
    # leaves a half-filled directory that the idempotency check would accept.
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(tmp, members=list(_safe_members_zip(zf, tmp)))
    else:
        with tarfile.open(archive) as tf:
            tf.extractall(tmp, filter="data")
        # An sdist wraps everything in NAME-VER/; drop that level so every
        # package's paths read the same (src/NAME-VER/pkg/...).
        entries = list(tmp.iterdir())
        if len(entries) == 1 and entries[0].is_dir():
            entries[0].rename(dest)
            tmp.rmdir()
            return
    tmp.rename(dest)


def prepare(name: str, version: str) -> Path:
    dest = src_dir(name, version)
    if dest.is_dir():
        return dest
    unpack(download(name, version), dest)
    return dest


def count_py(path: Path) -> int:
    return sum(1 for _ in path.rglob("*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="all", dest="set_name")
    parser.add_argument("--counts", action="store_true", help="also print .py file counts (stderr)")
    args = parser.parse_args(argv)
    failed = False
    for name, version in SETS[args.set_name]:
        try:
            path = prepare(name, version)
        except RuntimeError as err:
            print(f"error: {err}", file=sys.stderr)
            failed = True
            continue
        print(path)
        if args.counts:
            print(f"  {name}=={version}: {count_py(path)} .py files", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
