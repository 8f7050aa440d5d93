"""The one headless Chromium every browser test and bench launches: Debian's, as `make chromium`
installs it, with the flags that keep it quiet and off the network."""

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
