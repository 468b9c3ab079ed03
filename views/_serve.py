"""What `searchgrade app` serves: the app (app.py) through Streamlit's own ASGI app (``st.App``),
with the access gate of server/access/gate.py in front of Streamlit's server.

`streamlit run` finds ``app`` below and serves it with uvicorn, with the same options as a script
(port, address, upload size). The gate reads Streamlit's websocket messages with Streamlit's own
protobufs, given here (server/ never imports Streamlit). It is on when the app has a login (a
password, or st.login): without one there is nobody to keep out.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit import config
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from searchgrade.server import auth
from searchgrade.server.access.gate import StreamlitWire, middleware

#: The app's script (Streamlit runs it for every session).
APP_SCRIPT = Path(__file__).resolve().parent.parent / "app.py"


def _back_message(data: bytes) -> tuple[str | None, bool]:
    message = BackMsg()
    try:
        message.ParseFromString(data)
    except Exception:  # noqa: BLE001 - not a message: Streamlit closes the connection itself
        return None, False
    kind = message.WhichOneof("type")
    return kind, kind == "rerun_script" and message.rerun_script.is_auto_rerun


def _session_of(data: bytes) -> str | None:
    message = ForwardMsg()
    try:
        message.ParseFromString(data)
    except Exception:  # noqa: BLE001 - a message the gate need not read
        return None
    if message.WhichOneof("type") != "new_session":
        return None
    return message.new_session.initialize.session_id or None


def _plain_rerun(data: bytes) -> bytes:
    message = BackMsg()
    message.ParseFromString(data)
    message.rerun_script.ClearField("widget_states")
    message.rerun_script.ClearField("fragment_id")
    message.rerun_script.is_auto_rerun = False
    return message.SerializeToString()


def _has_login() -> bool:
    return auth.password() is not None or auth.oidc_status(auth.secrets_files(APP_SCRIPT.parent)).present


app = st.App(str(APP_SCRIPT), middleware=middleware(StreamlitWire(_back_message, _session_of, _plain_rerun),
                                                    enabled=_has_login(),
                                                    base=config.get_option("server.baseUrlPath") or ""))
