"""`tobe chat`: the terminal client of Face."""
