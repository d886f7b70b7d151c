"""Git worktrees and clones that agents work in: the registry (`manager`) and getting work back (`merging`)."""
