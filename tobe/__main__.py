"""`python -m tobe` is the `tobe` command (tests and supervisors spawn services this way)."""

from tobe.cli import main
from tobe.runtime.supervisor import follow_supervisor, wait_for_release

follow_supervisor()
wait_for_release()
main()
