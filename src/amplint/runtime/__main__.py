"""``python -m amplint.runtime SCRIPT ...``: the verify command before/without the main CLI."""

from .command import verify_command

if __name__ == "__main__":
    verify_command(prog_name="amplint verify")
