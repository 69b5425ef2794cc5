#!/usr/bin/env bash
# GPU check for `amplint verify`: the fixture matrix on CUDA in fp16 (+GradScaler) and bf16.
#
# Prints one verdict table (verdict, findings, throughput and peak memory for AMP vs FP32) and
# exits non-zero when a fixture does not behave as expected:
#   - every *_fixed.py and correct.py trains with no runtime findings, in both dtypes;
#   - every *_broken.py reports its finding in both dtypes;
#   - the broken scripts that really break fail in fp16 (in bf16 nothing overflows, so the
#     resume and per-step-scaler scripts may train: reported, not required).
# One Python process runs everything, so CUDA starts once. Sized for < 6 minutes on one H200
# (26 verify runs x 2 runs of 40 small steps each, plus install).
#
# Usage: scripts/gpu_check.sh [OUT_DIR]      (default: gpu-check-out/)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-gpu-check-out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"

if ! "$PY" -c "import amplint.runtime, torch, matplotlib" 2>/dev/null; then
  echo "installing amplint with the runtime and plot extras" >&2
  "$PY" -m pip install -q -e ".[runtime,plot]"
fi
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_check: torch sees no CUDA device')"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

timeout 330 "$PY" - "$OUT" <<'PYEOF'
import json, os, sys, time

import torch

from amplint.runtime import verify
from amplint.runtime.report import summary_stats
from amplint.runtime.plot import write_plot

out = sys.argv[1]
FAMILIES = {"fp16_model": ("AMP005", True), "clip": ("AMP003", True), "resume": ("AMP006", True),
            "bypass": ("AMP007", True), "autocast_backward": ("AMP002", False), "scaler_per_step": ("AMP004", True)}
cases = [("correct", None, False)]
for fam, (code, breaks) in FAMILIES.items():
    cases += [(f"{fam}_fixed", None, False), (f"{fam}_broken", code, breaks)]

print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
rows, bad, t0 = [], 0, time.time()
for dtype in ("float16", "bfloat16"):
    for name, code, breaks in cases:
        r = verify(f"fixtures/training/{name}.py", ["--steps", "40"], steps=40, device="cuda", dtype=dtype)
        with open(os.path.join(out, f"{name}-{dtype}.json"), "w") as fh:
            json.dump(r.to_dict(), fh, indent=1, default=str)
        if name == "correct":
            write_plot(r, os.path.join(out, f"correct-{dtype}.png"))
        codes = sorted({f.code for f in r.findings})
        if code is None:
            ok = r.exit_code == 0 and not codes
        else:
            ok = code in codes and (r.exit_code == 1 if (breaks and dtype == "float16") else r.exit_code in (0, 1))
        bad += not ok
        st = summary_stats(r)
        a, f = st.get("amp", {}), st.get("reference", {})
        mem = lambda s: f"{s['peak_memory_bytes'] / 2**20:.0f}" if s and s.get("peak_memory_bytes") else "-"
        sps = lambda s: f"{s['steps_per_s']:.0f}" if s and s.get("steps_per_s") else "-"
        rows.append((name, dtype, {0: "trains", 1: "FAILED", 2: "ERROR"}[r.exit_code], ",".join(codes) or "-",
                     f"{a.get('applied', 0)}/{a.get('steps', 0)}", sps(a), sps(f), mem(a), mem(f),
                     "ok" if ok else "UNEXPECTED"))
        print(f"  {name:<26} {dtype:<9} {rows[-1][2]:<7} {rows[-1][3]:<8} {rows[-1][-1]}", flush=True)

head = ("fixture", "dtype", "verdict", "findings", "applied", "AMP st/s", "FP32 st/s", "AMP MiB", "FP32 MiB", "expected")
widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
print()
for row in [head] + rows:
    print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)))
print(f"\n{len(rows) - bad}/{len(rows)} as expected in {time.time() - t0:.0f} s; JSON and plots in {out}/")
sys.exit(1 if bad else 0)
PYEOF
