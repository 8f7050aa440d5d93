"""The fuzz test: what users pass to a launch, each case in a process of its own."""
