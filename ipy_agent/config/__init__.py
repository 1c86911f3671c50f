"""What a person configures and keeps, and what an administrator sets: settings, policy, `%agent` options, grants, instructions, saved conversations.

Modules import one way, each only from those above it in this list:
- `settings_approvals`: which allow rules of a project's settings files the person approved, by content;
- `settings`: permission rules from settings files, each labelled with where it came from;
- `command_hooks`: command hooks in Claude Code's settings format, trusted by fingerprint, as Python hooks;
- `options`: the options of the `%agent` line, one table for its splitter and its parser;
- `output_styles`: output styles (Explanatory, Learning, `.claude/output-styles/*.md`), the system prompt's style;
- `policy`: the managed policy an administrator sets, which a person cannot loosen;
- `spending`: what this person has spent per day and in all, for the policy's budgets;
- `markdown_definitions`: Claude Code's slash commands and agent files (Markdown with front matter);
- `plugins`: Claude Code plugins and marketplaces from local folders, and the person's trust in them;
- `agent_config`: `AgentConfig`, every setting of an agent in one frozen value, checked once;
- `grants`: the rules granted with "Always allow", kept for the kernel session;
- `instructions`: AGENTS.md, CLAUDE.md and the notebook's instructions, as blocks for the system prompt;
- `person_key`: the person's secret, to sign what is kept where commands write (saved grants);
- `conversation_file`: a conversation saved to JSON and loaded back.
"""
