"""The shape of a cache entry: a stored result is used only when it is exactly what the cache
writes, for the key it is stored under (a truncated, corrupt or foreign entry is a miss)."""

from __future__ import annotations

from amplint.model import Applicability, Severity


def _is_position(value) -> bool:
    return (
        isinstance(value, dict) and set(value) == {"row", "column"}
        and all(type(value[k]) is int and value[k] >= 1 for k in ("row", "column"))
    )


def _is_optional_str(value) -> bool:
    return value is None or isinstance(value, str)


def _valid_finding(item) -> bool:
    if not isinstance(item, dict):
        return False
    if not all(isinstance(item.get(k), str) for k in ("code", "message", "filename", "severity")):
        return False
    if item["severity"] not in {s.value for s in Severity}:
        return False
    if not (_is_position(item.get("location")) and _is_position(item.get("end_location"))):
        return False
    if not _is_optional_str(item.get("no_fix_reason")):
        return False
    if any(item.get(k) is not None and type(item[k]) is not int for k in ("noqa_row", "cell")):
        return False
    fix = item.get("fix")
    if fix is None:
        return True
    return (
        isinstance(fix, dict)
        and fix.get("applicability") in {a.value for a in Applicability}
        and isinstance(fix.get("message"), str)
        and isinstance(fix.get("edits"), list)
        and all(
            isinstance(e, dict) and isinstance(e.get("content"), str)
            and _is_position(e.get("location")) and _is_position(e.get("end_location"))
            for e in fix["edits"]
        )
    )


def _is_project_record(value) -> bool:
    """What :func:`amplint.project.deferred.entry_record` writes."""
    return (
        isinstance(value, dict) and set(value) == {"questions", "digest"} and isinstance(value["digest"], str)
        and isinstance(value["questions"], list)
        and all(isinstance(q, list) and len(q) == 2 and all(isinstance(part, str) for part in q) for q in value["questions"])
    )


def valid_entry(data, key: str) -> bool:
    """``data`` has exactly the shape :meth:`Cache.put` writes, for this ``key``."""
    if not isinstance(data, dict) or data.get("key") != key or type(data.get("skipped")) is not bool:
        return False
    if "project" not in data or not (data["project"] is None or _is_project_record(data["project"])):
        return False
    findings, errors = data.get("findings"), data.get("errors")
    if not isinstance(findings, list) or not isinstance(errors, list):
        return False
    return all(_valid_finding(item) for item in findings) and all(
        isinstance(e, dict) and set(e) == {"filename", "message", "internal"}
        and isinstance(e["filename"], str) and isinstance(e["message"], str) and type(e["internal"]) is bool
        for e in errors
    )


def summary_from_entry(data, key: str):
    """The module summary a summary entry holds, or ``None`` unless it is exactly what
    :meth:`Cache.put_summary` writes for ``key``."""
    from amplint.project.records import ModuleSummary

    if not isinstance(data, dict) or set(data) != {"key", "summary"} or data["key"] != key:
        return None
    try:
        return ModuleSummary.from_dict(data["summary"])
    except (TypeError, KeyError, ValueError, AttributeError):
        return None
