"""Command line: `python -m sciad demo`."""

import sys


def main() -> int:
    """Dispatch `python -m sciad <command>`."""
    if len(sys.argv) < 2 or sys.argv[1] != "demo":
        print("usage: python -m sciad demo [--out PATH] [--seed N] [--noise SIGMA]")
        return 2
    from ._demo import main as demo

    return demo(sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
