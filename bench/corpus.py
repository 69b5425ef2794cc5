"""Download and unpack the pinned real-world corpus used by the benchmarks.

The corpus lives in a cache outside the repository (it is tens of MB of
third-party code and must never be committed):

    $AMPLINT_BENCH_CACHE            (default ~/.cache/amplint-bench)
        wheels/                     what `pip download` fetched
        src/NAME-VER/               each archive unpacked

Usage:
    python bench/corpus.py [--set speed|accuracy|all]

Prints one prepared directory per line, so other scripts (and people) can
pipe it. Re-running is cheap: packages already unpacked are skipped.
Stdlib only, so it runs from any interpreter that has pip.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

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
# Not included: fairseq 0.12.2 (sdist only; its build needs numpy<1.20, which
# does not build on Python 3.11, and pip must build an sdist to download it).

SETS = {
    "speed": SPEED,
    "accuracy": {**SPEED, **ACCURACY_EXTRA},
}
SETS["all"] = SETS["accuracy"]


def cache_dir() -> Path:
    return Path(os.environ.get("AMPLINT_BENCH_CACHE", "~/.cache/amplint-bench")).expanduser()


def src_dir(name: str, version: str) -> Path:
    return cache_dir() / "src" / f"{name}-{version}"


def corpus_dirs(set_name: str) -> list[Path]:
    """The unpacked directories of a set, without downloading anything."""
    return [src_dir(n, v) for n, v in SETS[set_name].items()]


def _normalise(name: str) -> str:
    # Wheel/sdist file names use underscores, registry names may use dashes.
    return name.lower().replace("-", "_").replace(".", "_")


def _find_archive(wheels: Path, name: str, version: str) -> Path | None:
    wanted = f"{_normalise(name)}-{version}"
    for path in sorted(wheels.iterdir()):
        stem = _normalise(path.name.split("-")[0]) + "-" + "-".join(path.name.split("-")[1:])
        if stem.lower().startswith(wanted.lower() + "-") or stem.lower().startswith(wanted.lower() + "."):
            return path
    return None


def _pip_download(name: str, version: str, wheels: Path, binary: bool) -> bool:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
           "--disable-pip-version-check", "-d", str(wheels), f"{name}=={version}"]
    # Prefer the wheel: it is exactly the installed source tree, no build
    # step. Sdist only when no wheel exists (e.g. deepspeed). pip still builds
    # the sdist's metadata, so only this package is forced to source: its
    # build dependencies may come as wheels (":all:" would compile setuptools).
    cmd += ["--only-binary=:all:"] if binary else [f"--no-binary={name}"]
    return subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode == 0


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
    for name, version in SETS[args.set_name].items():
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
