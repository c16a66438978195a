"""`tobe doctor [--fix]`: check what a ToBe installation needs, one line per finding.

One module per group of checks, each a function from the `Doctor` state to its findings;
`cli` checks the configuration first, then runs `checks.CHECKS` in order, printing each line.
`--fix` repairs what a check can (permissions, the local credentials, the store's schema) and
says exactly what it changed.
"""
