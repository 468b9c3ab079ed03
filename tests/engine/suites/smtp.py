"""A real SMTP server on loopback (aiosmtpd) for the alert tests: plain, or requiring STARTTLS with a
certificate signed by a CA the test makes (the ``cryptography`` package), and a login checked
against the ``SEARCHGRADE_SMTP_USER`` / ``SEARCHGRADE_SMTP_PASSWORD`` the test sets."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
from pathlib import Path

USER, PASSWORD = "alerts@example.com", "s3cret-Pa55"


def make_certificates(folder: Path, *, ip: bool = True) -> tuple[Path, Path, Path]:
    """(ca.pem, server.pem, server.key): a CA, and a server certificate it signed for localhost and
    (``ip``) 127.0.0.1, with the extensions a strict verifier asks for."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "searchgrade test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
              .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")] + (
                  [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))] if ip else [])), critical=False)
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                             critical=False)
              .sign(ca_key, hashes.SHA256()))
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


class Mailbox:
    """aiosmtpd on loopback, keeping every message's text and every login tried.

    Args:
        certificate: (server.pem, server.key): STARTTLS offered and required before anything but EHLO,
            and a login (USER, PASSWORD) required to send.
        plain_login: no TLS, yet AUTH offered in clear (the server a password must never reach).
        login: with ``certificate``, False for a server that offers no login mechanism.
    """

    def __init__(self, certificate: tuple[Path, Path] | None = None, *, plain_login: bool = False,
                 login: bool = True) -> None:
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult, LoginPassword

        self.messages: list[str] = []
        self.logins: list[tuple[str, bool]] = []  # (user, whether the password was right), in order
        mailbox = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
                mailbox.messages.append(envelope.content.decode("utf-8", "replace"))
                return "250 OK"

        def authenticator(server, session, envelope, mechanism, auth_data):
            if not isinstance(auth_data, LoginPassword):
                return AuthResult(success=False, handled=False)
            ok = (auth_data.login.decode(), auth_data.password.decode()) == (USER, PASSWORD)
            mailbox.logins.append((auth_data.login.decode(), ok))
            return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535

        options: dict = {}
        if certificate is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(certificate[0]), str(certificate[1]))
            options = {"tls_context": context, "require_starttls": True}
            if login:
                options.update(auth_required=True, authenticator=authenticator)
            else:
                options.update(auth_exclude_mechanism={"LOGIN", "PLAIN"})
        elif plain_login:
            options = {"auth_require_tls": False, "auth_required": True, "authenticator": authenticator}
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port, **options)
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
