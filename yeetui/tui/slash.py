"""The slash commands' behaviour, mixed into the main screen (`/help`, `/oracle …`, `/orchestrate …`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yeetui.errors import YeetuiError
from yeetui.tui.commands import SlashCommand, suggest

if TYPE_CHECKING:
    from yeetui.tui.screens.main import MainScreen

    _Base = MainScreen
else:
    _Base = object


class SlashCommands(_Base):
    async def run_slash(self, name: str, args: str) -> None:
        command = next((c for c in self.commands if c.name == name), None)
        if command is None:
            close = suggest(name, self.commands)
            hint = f" Did you mean {', '.join('/' + c for c in close)}?" if close else ""
            await self.view().add_notice("warning", f"Unknown command /{name}.{hint} Type /help for the list.")
            return
        try:
            if command.handler == "profile":
                await self.cmd_profile(command, args)
            else:
                await getattr(self, f"cmd_{command.handler}")(args)
        except YeetuiError as exc:
            await self.view().add_notice("error", str(exc))

    def palette_callback(self, command: SlashCommand):
        async def run() -> None:
            if command.usage.endswith(">") and command.handler != "profile":
                composer = self.query_one("#composer")
                composer.text = f"/{command.name} "
                composer.focus()
            else:
                await self.run_slash(command.name, "")
        return run

    async def _need(self, args: str, usage: str) -> bool:
        if args:
            return True
        await self.view().add_notice("warning", f"Usage: {usage}")
        return False

    async def cmd_help(self, args: str) -> None:
        from yeetui.tui.screens.help import HelpScreen

        keys = [(self.app.get_key_display(b), b.description or b.action) for _, b in self.app._bindings
                if b.description]
        keys += [("enter", "send"), ("ctrl+j / shift+enter", "new line"), ("up / down", "history")]
        await self.app.push_screen(HelpScreen(keys, [(c.usage, c.help) for c in self.commands]))

    async def cmd_new(self, args: str) -> None:
        profile = self.runtime.profiles.get(self.runtime.settings.primary_profile)
        session = await self.runtime.new_session(profile, model=self.model)
        await self.open_session(session.id)

    async def cmd_sessions(self, args: str) -> None:
        await self.open_switcher()

    async def cmd_inbox(self, args: str) -> None:
        self.toggle_inbox()

    async def cmd_agents(self, args: str) -> None:
        lines = [f"{p.name:<13} {', '.join(p.capabilities):<22} {p.description[:60]}"
                 for p in self.runtime.profiles.profiles.values()]
        await self.view().add_notice("info", "Agent profiles:\n" + "\n".join(lines))

    async def cmd_model(self, args: str) -> None:
        from yeetui.providers.base import split_model

        if not args:
            current = self.model or self.runtime.settings.model
            await self.view().add_notice("info", f"Model: {current}. Change it with /model provider/model.")
            return
        split_model(args)
        self.model = args
        for control in self.controls.values():
            control.model = args
        await self.view().add_notice("info", f"Model set to {args} for this window's sessions.")

    async def cmd_compact(self, args: str) -> None:
        from yeetui.runs.compaction import compact_session

        await self.view().add_notice("info", "Compacting the conversation…")
        summary = await compact_session(self.runtime, self.current or "", model=self.model)
        await self.view().add_notice("info", f"Compacted: {len(summary)} characters of summary replace the "
                                     "earlier turns in the model's context.")

    async def cmd_cancel(self, args: str) -> None:
        store, spawner = self.runtime.store, self.runtime.spawner
        live = [await store.get_run(r) for r in spawner.live_runs()]
        live = [r for r in live if r is not None]
        if not args:
            children = [r for r in live if r.options.get("parent_session_id") == self.current]
            if not children:
                await self.view().add_notice("warning", "No running subagent here. Usage: /cancel [oracle#4|run id]")
                return
            target = children[-1]
        else:
            target = next((r for r in live if r.label == args or r.id.startswith(args)), None)
            if target is None:
                await self.view().add_notice("warning", f"No running subagent {args!r}.")
                return
        await spawner.cancel(target.id, graceful=True)
        await self.view().add_notice("info", f"Asked {target.label} to wrap up.")

    async def cmd_oracle(self, args: str) -> None:
        if await self._need(args, "/oracle <question>"):
            await self._spawn("oracle", args)

    async def cmd_review(self, args: str) -> None:
        from yeetui.subagents.host import review_request

        request = await review_request(self.runtime, parent_session_id=self.current or "", target=args or None)
        handle = await self.runtime.spawner.spawn(request)
        self.session_ids.add(handle.session_id)
        await self.view().add_notice("info", f"Started {handle.label}.")

    async def cmd_pair(self, args: str) -> None:
        await self.toggle_pair()

    async def cmd_orchestrate(self, args: str) -> None:
        if await self._need(args, "/orchestrate <goal>"):
            await self._spawn("orchestrator", args)

    async def cmd_theme(self, args: str) -> None:
        from yeetui.tui.themes import save_theme

        names = sorted(self.app.available_themes)
        if not args:
            await self.view().add_notice("info", f"Theme: {self.app.theme}. Available: {', '.join(names)}")
            return
        if args not in self.app.available_themes:
            await self.view().add_notice("warning", f"No theme {args!r}. Available: {', '.join(names)}")
            return
        self.app.theme = args
        save_theme(args)

    async def cmd_quit(self, args: str) -> None:
        self.app.exit()

    async def cmd_profile(self, command: SlashCommand, args: Any) -> None:
        if await self._need(args, command.usage):
            await self._spawn(command.profile or "", args)
