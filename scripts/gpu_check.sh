#!/usr/bin/env bash
# GPU check for `amplint verify`: the fixture matrix on CUDA in fp16 (+GradScaler) and bf16.
#
# Prints one verdict table (verdict, findings, throughput and peak memory for AMP vs FP32) and
# exits non-zero when a fixture does not behave as expected:
#   - every fixtures/training/*_fixed.py and correct.py trains with no runtime findings, in both dtypes;
#   - every *_broken.py reports its finding in both dtypes;
#   - the broken scripts that really break fail in fp16 (in bf16 nothing overflows, so the
#     resume and per-step-scaler scripts may train: reported, not required);
#   - the DDP examples: ddp_correct.py trains without findings, ddp_clip_before_unscale.py reports
#     AMP003 (and names it in its verdict line); two ranks when the machine has two GPUs, else one;
#   - the verdict cases of fixtures/runtime/ (CPU scripts: their throughput says nothing about the
#     GPU, they check the verdicts): a script that diverges on its own is INCONCLUSIVE, one without
#     AMP is NO AMP, a .half() model FAILS with AMP005 and its criteria "not measured", a
#     classifier's boundary input flips its decision under --eval and its clear inputs do not.
# One Python process runs everything, so CUDA starts once. Sized for < 9 minutes on one H200
# (about 40 verify runs of 40 small steps each, plus install).
#
# Usage: scripts/gpu_check.sh [OUT_DIR]      (default: gpu-check-out/)
# GPU_CHECK_DEVICE=cpu runs the same matrix on the CPU (CUDA code remapped), to check this script
# itself on a machine without a GPU; GPU_CHECK_ONLY=REGEX keeps the cases whose name matches.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-gpu-check-out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
DEVICE="${GPU_CHECK_DEVICE:-cuda}"

if ! "$PY" -c "import amplint.runtime, torch, matplotlib" 2>/dev/null; then
  echo "installing amplint with the runtime and plot extras" >&2
  "$PY" -m pip install -q -e ".[runtime,plot]"
fi
if [ "$DEVICE" = cuda ]; then
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_check: torch sees no CUDA device')"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
fi

timeout 540 "$PY" - "$OUT" "$DEVICE" "${GPU_CHECK_ONLY:-}" <<'PYEOF'
import json, os, re, sys, time

import torch

from amplint.runtime import verify
from amplint.runtime.plot import write_plot
from amplint.runtime.report import VERDICT_WORDS, summary_stats, verdict_line

out, device, only = sys.argv[1], sys.argv[2], sys.argv[3]
gpus = torch.cuda.device_count() if device == "cuda" else 0
nproc = 2 if gpus >= 2 or device == "cpu" else 1
FAMILIES = {"fp16_model": ("AMP005", True), "clip": ("AMP003", True), "resume": ("AMP006", True),
            "bypass": ("AMP007", True), "autocast_backward": ("AMP002", False), "scaler_per_step": ("AMP004", True)}

# (name, script, verify keyword arguments, expectation(result, dtype) -> bool)
def clean_trains(r, dtype):
    return r.exit_code == 0 and not r.findings

def reports(code, breaks):
    def expect(r, dtype):
        codes = {f.code for f in r.findings}
        return code in codes and (r.exit_code == 1 if (breaks and dtype == "float16") else r.exit_code in (0, 1))
    return expect

cases = [("correct", "fixtures/training/correct.py", {}, clean_trains)]
for fam, (code, breaks) in FAMILIES.items():
    cases += [(f"{fam}_fixed", f"fixtures/training/{fam}_fixed.py", {}, clean_trains),
              (f"{fam}_broken", f"fixtures/training/{fam}_broken.py", {}, reports(code, breaks))]
ddp = {"nproc_per_node": nproc, "max_skipped_frac": 0.2}
cases += [
    ("ddp_correct", "fixtures/training/ddp_correct.py", dict(ddp, lr="3e-4"), clean_trains),
    ("ddp_clip_before_unscale", "fixtures/runtime/ddp_clip_before_unscale.py", dict(ddp, lr="3e-4"),
     lambda r, d: [f.code for f in r.findings] == ["AMP003"] and ", with 1 runtime finding: AMP003 at " in verdict_line(r)),
]
RT = "fixtures/runtime"
cases += [
    ("verify_diverging_lr", f"{RT}/verify_diverging_lr.py", {}, lambda r, d: r.exit_code == 3 and "FP32 reference itself" in r.message),
    ("verify_reference_raises", f"{RT}/verify_reference_raises.py", {},
     lambda r, d: r.exit_code == 3 and r.message.startswith("the FP32 reference itself failed")),
    ("verify_no_amp", f"{RT}/verify_no_amp.py", {}, lambda r, d: r.exit_code == 4),
    ("verify_half_model", f"{RT}/verify_half_model.py", {},
     lambda r, d: r.exit_code == 1 and "AMP005" in {f.code for f in r.findings} and any(not c.measured for c in r.checks)),
    ("classifier_boundary", f"{RT}/verify_classifier.py", {"evaluate": f"{RT}/verify_classifier.py:eval_boundary"},
     lambda r, d: r.exit_code == 1 and [c["input"] for c in r.evaluation["changed"]] == [4]),
    ("classifier_clear", f"{RT}/verify_classifier.py", {"evaluate": f"{RT}/verify_classifier_eval.py:eval_clear"},
     lambda r, d: r.exit_code == 0 and r.evaluation["changed"] == []),
]
cases = [c for c in cases if not only or re.search(only, c[0])]

print(f"torch {torch.__version__}, {torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}, "
      f"DDP cases on {nproc} rank(s)", flush=True)
rows, bad, t0 = [], 0, time.time()
for dtype in ("float16", "bfloat16"):
    for name, script, kwargs, expect in cases:
        kwargs = dict(kwargs)
        args = ["--steps", "40"] + (["--lr", kwargs.pop("lr")] if "lr" in kwargs else [])
        t1 = time.time()
        try:
            r = verify(script, args, steps=40, device=device, dtype=dtype, **kwargs)
            ok = expect(r, dtype)
        except Exception as exc:  # a harness failure is one row, not the end of the check
            print(f"  {name:<26} {dtype:<9} raised {type(exc).__name__}: {exc}", flush=True)
            bad += 1
            continue
        with open(os.path.join(out, f"{name}-{dtype}.json"), "w") as fh:
            json.dump(r.to_dict(), fh, indent=1, default=str)
        if name in ("correct", "verify_diverging_lr", "classifier_boundary") and r.amp is not None:
            write_plot(r, os.path.join(out, f"{name}-{dtype}.png"))
        codes = sorted({f.code for f in r.findings})
        bad += not ok
        st = summary_stats(r)
        a, f = st.get("amp", {}), st.get("reference", {})
        mem = lambda s: f"{s['peak_memory_bytes'] / 2**20:.0f}" if s and s.get("peak_memory_bytes") else "-"
        sps = lambda s: f"{s['steps_per_s']:.0f}" if s and s.get("steps_per_s") else "-"
        rows.append((name, dtype, VERDICT_WORDS[r.exit_code], ",".join(codes) or "-",
                     f"{a.get('applied', 0)}/{a.get('steps', 0)}", sps(a), sps(f), mem(a), mem(f),
                     f"{time.time() - t1:.0f}", "ok" if ok else "UNEXPECTED"))
        print(f"  {name:<26} {dtype:<9} {rows[-1][2]:<12} {rows[-1][3]:<8} {rows[-1][-1]}", flush=True)
        if not ok:
            print(f"    {verdict_line(r)}", flush=True)

head = ("case", "dtype", "verdict", "findings", "applied", "AMP st/s", "FP32 st/s", "AMP MiB", "FP32 MiB", "s",
        "expected")
widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
print()
for row in [head] + rows:
    print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)))
total = len(cases) * 2
print(f"\n{total - bad}/{total} as expected in {time.time() - t0:.0f} s; JSON and plots in {out}/")
print("fixtures/runtime/ cases run on the CPU whatever the device: their st/s and MiB are not GPU figures")
sys.exit(1 if bad else 0)
PYEOF
