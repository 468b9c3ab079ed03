"""Email alerts against a real SMTP server on loopback (aiosmtpd) that requires STARTTLS and a login:
delivered when its CA is trusted; a wrong password, an untrusted certificate, a server that would
take the password in clear: each refused with one line naming the fix, and the password never sent
where it should not go. (A wrong password during a suite's run: tests/engine/suites/test_alerts_e2e.py.)"""

from __future__ import annotations

import smtplib

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.alerts.channels import ChannelRefused, check_smtp_server, send_email
from tests.engine.suites.smtp import PASSWORD, USER, Mailbox, make_certificates


@pytest.fixture(scope="module")
def tls_mailbox(certificates):
    mailbox = Mailbox(certificates[1:])
    yield mailbox
    mailbox.stop()


def _env(mailbox: Mailbox, **more: str) -> dict[str, str]:
    return {"SEARCHGRADE_SMTP_HOST": "127.0.0.1", "SEARCHGRADE_SMTP_PORT": str(mailbox.port),
            "SEARCHGRADE_SMTP_FROM": "searchgrade@example.com", **more}


def test_delivered_over_starttls_with_a_login_to_a_server_whose_ca_is_trusted(tls_mailbox, certificates):
    env = _env(tls_mailbox, SEARCHGRADE_SMTP_USER=USER, SEARCHGRADE_SMTP_PASSWORD=PASSWORD,
               SEARCHGRADE_SMTP_CA_FILE=str(certificates[0]))
    before = len(tls_mailbox.messages)
    check_smtp_server(env)  # what `suite alert --email` checks: TLS, the certificate and the login
    send_email("team@example.com", "searchgrade: test", "over TLS", env)
    # The server refuses MAIL before STARTTLS and sending before a login: the message came over both.
    assert len(tls_mailbox.messages) == before + 1 and "over TLS" in tls_mailbox.messages[-1]
    assert tls_mailbox.logins[-2:] == [(USER, True), (USER, True)]


def test_a_wrong_password_is_refused_in_one_line_naming_the_variables(tls_mailbox, certificates):
    env = _env(tls_mailbox, SEARCHGRADE_SMTP_USER=USER, SEARCHGRADE_SMTP_PASSWORD="wrong",
               SEARCHGRADE_SMTP_CA_FILE=str(certificates[0]))
    before = len(tls_mailbox.messages)
    with pytest.raises(ChannelRefused) as refused:
        send_email("team@example.com", "s", "t", env)
    line = str(refused.value)
    assert "refused the login of 'alerts@example.com'" in line and "535" in line
    assert "SEARCHGRADE_SMTP_PASSWORD" in line and "\n" not in line and "wrong" not in line
    assert tls_mailbox.logins[-1] == (USER, False) and len(tls_mailbox.messages) == before


def test_an_untrusted_certificate_is_refused_before_the_password_is_sent(tls_mailbox):
    env = _env(tls_mailbox, SEARCHGRADE_SMTP_USER=USER, SEARCHGRADE_SMTP_PASSWORD=PASSWORD)  # no CA file
    tried = len(tls_mailbox.logins)
    for attempt in (lambda: check_smtp_server(env), lambda: send_email("team@example.com", "s", "t", env)):
        with pytest.raises(ChannelRefused) as refused:
            attempt()
        line = str(refused.value)
        assert f"127.0.0.1:{tls_mailbox.port}'s certificate is not trusted" in line
        assert "set SEARCHGRADE_SMTP_CA_FILE to the PEM file of the CA" in line and "\n" not in line
    assert len(tls_mailbox.logins) == tried  # the untrusted server never saw the password


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")  # that server is the point
def test_a_server_without_starttls_never_gets_the_password_in_clear():
    mailbox = Mailbox(plain_login=True)  # offers AUTH over plain text
    try:
        env = _env(mailbox, SEARCHGRADE_SMTP_USER=USER, SEARCHGRADE_SMTP_PASSWORD=PASSWORD)
        for attempt in (lambda: check_smtp_server(env), lambda: send_email("team@example.com", "s", "t", env)):
            with pytest.raises(ChannelRefused, match="offers no STARTTLS, so the login of SEARCHGRADE_SMTP_USER "
                                                     "was not made"):
                attempt()
        assert mailbox.logins == [] and mailbox.messages == []
        # The refusal is ours: smtplib alone would have logged in over plain text.
        with smtplib.SMTP("127.0.0.1", mailbox.port, timeout=10) as smtp:
            smtp.login(USER, PASSWORD)
        assert mailbox.logins == [(USER, True)]
    finally:
        mailbox.stop()


def test_without_a_login_a_plain_relay_on_loopback_is_used():
    relay = Mailbox()
    try:
        send_email("team@example.com", "s", "plain relay", _env(relay))
        assert len(relay.messages) == 1 and "plain relay" in relay.messages[0]
    finally:
        relay.stop()


def test_a_ca_file_that_is_missing_or_holds_no_certificate_is_one_line(tls_mailbox, tmp_path):
    with pytest.raises(SearchGradeError, match="SEARCHGRADE_SMTP_CA_FILE=.* is not a file; give the PEM file"):
        check_smtp_server(_env(tls_mailbox, SEARCHGRADE_SMTP_CA_FILE=str(tmp_path / "nope.pem")))
    (tmp_path / "junk.pem").write_text("not a certificate\n", encoding="utf-8")
    with pytest.raises(SearchGradeError, match="holds no CA certificate"):
        check_smtp_server(_env(tls_mailbox, SEARCHGRADE_SMTP_CA_FILE=str(tmp_path / "junk.pem")))


def test_the_smtps_port_is_refused_in_one_line_rather_than_waiting_for_a_greeting(tls_mailbox):
    with pytest.raises(SearchGradeError, match="SEARCHGRADE_SMTP_PORT=465 is implicit TLS .* usually 587"):
        check_smtp_server({**_env(tls_mailbox), "SEARCHGRADE_SMTP_PORT": "465"})


def test_a_trusted_certificate_for_another_name_says_to_set_the_host(tmp_path):
    ca, *certificate = make_certificates(tmp_path, ip=False)  # localhost only, not 127.0.0.1
    mailbox = Mailbox(tuple(certificate))
    try:
        env = _env(mailbox, SEARCHGRADE_SMTP_CA_FILE=str(ca), SEARCHGRADE_SMTP_USER=USER,
                   SEARCHGRADE_SMTP_PASSWORD=PASSWORD)
        with pytest.raises(ChannelRefused, match="certificate is not issued to '127.0.0.1' .*; set "
                                                 "SEARCHGRADE_SMTP_HOST to a name the certificate names"):
            send_email("team@example.com", "s", "t", env)
        send_email("team@example.com", "s", "by its name", {**env, "SEARCHGRADE_SMTP_HOST": "localhost"})
        assert mailbox.logins == [(USER, True)] and "by its name" in mailbox.messages[0]
    finally:
        mailbox.stop()


def test_a_login_to_a_server_that_offers_none_says_to_unset_the_user(certificates):
    mailbox = Mailbox(certificates[1:], login=False)
    try:
        env = _env(mailbox, SEARCHGRADE_SMTP_CA_FILE=str(certificates[0]), SEARCHGRADE_SMTP_USER=USER,
                   SEARCHGRADE_SMTP_PASSWORD=PASSWORD)
        with pytest.raises(ChannelRefused, match=r"offers no login searchgrade can make \(PLAIN, LOGIN or "
                                                 r"CRAM-MD5; it offers: none\); unset SEARCHGRADE_SMTP_USER"):
            check_smtp_server(env)
        send_email("team@example.com", "s", "no login", _env(mailbox, SEARCHGRADE_SMTP_CA_FILE=str(certificates[0])))
        assert "no login" in mailbox.messages[0]
    finally:
        mailbox.stop()
