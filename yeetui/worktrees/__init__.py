"""Git worktrees and clones that agents work in: `Worktrees` (`manager`: made, recorded,
claimed, cleaned up) and getting work back (`merging`)."""
