"""Scheduled agents: when a schedule fires (`times`: cron expressions through croniter, and `every 30m`). The
schedules themselves live in the store (`yeetui.store.schedules`), and firing them is a use case of its own
(`yeetui.application.schedules`)."""
