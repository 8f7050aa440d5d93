"""The build step pyproject.toml cannot say: js/ (the widget's ESM and CSS) ships in the wheel as kernel_nb/static/.

The widget's source stays at the top of the checkout, with no build step of its own; an editable
install reads it from there (`kernel_nb.view.widget.asset`).
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ASSETS = Path(__file__).parent / "js"


class BuildWithAssets(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "kernel_nb" / "static"
        self.mkpath(str(target))
        for source in sorted(ASSETS.glob("*.js")) + sorted(ASSETS.glob("*.css")):
            self.copy_file(str(source), str(target / source.name))


setup(cmdclass={"build_py": BuildWithAssets})
