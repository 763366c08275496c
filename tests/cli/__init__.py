"""The `graphwright` command: output, exit codes, help, what each command loads."""
