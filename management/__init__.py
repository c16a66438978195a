"""The operator's commands: `tobe admin …` (a client of `mind.management`) and `tobe up`."""
