"""Alerts where teams look: a webhook (POST JSON with a ``text`` field, as Slack, Teams and
Mattermost incoming webhooks read it) and email (SMTP, STARTTLS when the server offers it, its
certificate always verified, a login only over TLS).

- channels: sending one message to a webhook or an address (settings from the environment).
- text: what a regression, a "could not evaluate" and a recovery alert say.
- deliver: every channel of a suite, each retried, each attempt's outcome recorded in the store;
  a failing channel never raises (it never fails the run).
"""
