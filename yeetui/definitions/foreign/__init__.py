"""Other tools' definition files, read as those tools read them: Claude Code and OpenCode agents
(`agents`), their front matter including the shapes only a lenient reader accepts (`frontmatter`), and
their slash-command files (`commands`)."""
