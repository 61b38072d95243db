"""The built-in Markdown memory store: plain files with frontmatter, decay and archive."""
