"""python -m crfkit.cli"""

from crfkit.cli import console

console()
