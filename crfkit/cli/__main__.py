"""python -m crfkit.cli"""

from crfkit.cli import main

main()
