"""Scheduled agents: when a schedule fires (`times`: cron expressions through croniter, and `every 30m`), and how a
scheduler's launches outlive it (`leases`: a claim is not taken over while a launch its scheduler started still
runs). The schedules themselves live in the store (`yeetui.store.schedules`), and firing them is a use case of its
own (`yeetui.application.schedules`)."""
