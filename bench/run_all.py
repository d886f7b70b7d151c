"""Run every benchmark in bench/ and print their ratios."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"== {script.name}", flush=True)
        subprocess.run([sys.executable, str(script), *sys.argv[1:]], check=False)
