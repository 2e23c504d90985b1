"""``python -m thoth ARGS``: runs the ``thoth`` command line with ARGS.

The wheel holds the library, not the server binary (the binary is built with ``cargo install --path
crates/thoth``). This runs the ``thoth`` program named by the ``THOTH_BIN`` environment variable, else the one
found on ``PATH``, and exits with its status; when there is none it says how to install it.
"""

import os
import shutil
import subprocess
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    exe = os.environ.get("THOTH_BIN") or shutil.which("thoth")
    if not exe:
        sys.stderr.write(
            "error: the thoth command-line program is not installed (the Python package holds the library only).\n"
            "Install it from a checkout with `cargo install --path crates/thoth`, or set THOTH_BIN to its path.\n"
        )
        return 127
    if os.name == "posix":
        # Replace this process: signals and the exit status are the program's own.
        try:
            os.execv(exe, [exe, *argv])
        except OSError as e:
            sys.stderr.write(f"error: cannot run {exe}: {e}\n")
            return 127
    try:
        return subprocess.call([exe, *argv])
    except KeyboardInterrupt:
        return 130
    except OSError as e:
        sys.stderr.write(f"error: cannot run {exe}: {e}\n")
        return 127


if __name__ == "__main__":
    sys.exit(main())
