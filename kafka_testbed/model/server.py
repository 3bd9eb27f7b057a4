"""Listeners and connections: framing, TLS, SASL and dispatch, one thread per connection as Kafka muting allows."""

import logging
import socket
import ssl
import threading
import time

from kafka_testbed import security
from kafka_testbed.model import handlers, wire

LOG = logging.getLogger("kafka_testbed.model.server")
_PRE_AUTH_APIS = {wire.API_VERSIONS_KEY, 17, 36}  # ApiVersions, SaslHandshake, SaslAuthenticate


class Connection:
    """What the broker knows about one client connection."""

    def __init__(self, sock, address, endpoint, controller=False):
        self.sock = sock
        self.address = address
        self.endpoint = endpoint
        self.controller = controller  # a connection to a controller listener (controller.listener.names)
        self.principal = "User:ANONYMOUS"
        self.authenticated = not endpoint.uses_sasl
        self.sasl = None  # ScramServer after a successful SaslHandshake
        self.sasl_raw = False  # SaslHandshake v0: tokens follow without SaslAuthenticate framing

    @property
    def client_host(self):
        return self.address[0]


class SocketServer:
    def __init__(self, broker):
        self.broker = broker
        self.sockets = []
        self._threads = []
        self._closing = threading.Event()
        controllers = {
            name.strip().upper()
            for name in broker.props.get("controller.listener.names", "").split(",")
            if name.strip()
        }
        for endpoint in broker.config.listeners:
            context = None
            if endpoint.uses_tls:
                context = security.server_ssl_context(
                    broker.props, listener=endpoint.name, security_protocol=endpoint.protocol
                )
            sock = socket.socket(socket.AF_INET6 if ":" in endpoint.host else socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((endpoint.host, endpoint.port))
            except OSError as exc:
                sock.close()
                raise OSError(
                    f"Socket server failed to bind to {endpoint.host}:{endpoint.port}: {exc.strerror}"
                ) from None
            sock.listen(128)
            self.sockets.append((sock, endpoint, context, endpoint.name in controllers))

    def start(self):
        for sock, endpoint, context, controller in self.sockets:
            thread = threading.Thread(
                target=self._accept_loop,
                args=(sock, endpoint, context, controller),
                name=f"acceptor-{endpoint.name}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def stop(self):
        self._closing.set()
        for sock, _ignored, _ignored, _ignored in self.sockets:
            try:
                sock.close()
            except OSError:
                pass

    def _accept_loop(self, sock, endpoint, context, controller):
        while not self._closing.is_set():
            try:
                client, address = sock.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(
                target=self._serve,
                args=(client, address, endpoint, context, controller),
                name=f"conn-{address[1]}",
                daemon=True,
            ).start()

    def _serve(self, sock, address, endpoint, context, controller):
        try:
            if context is not None:
                sock.settimeout(10)
                sock = context.wrap_socket(sock, server_side=True)
                sock.settimeout(None)
            connection = Connection(sock, address, endpoint, controller)
            if endpoint.uses_tls:
                connection.principal = security.principal_from_peer_cert(sock.getpeercert(binary_form=True))
            while not self._closing.is_set():
                if not self._serve_one(connection):
                    return
        except (OSError, ssl.SSLError, wire.ProtocolViolation) as exc:
            LOG.info("closing connection from %s: %s", address, exc)
        except Exception:  # pylint: disable=broad-except  # a handler bug must cost one connection, not the broker
            LOG.exception("closing connection from %s after an internal error", address)
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def _serve_one(self, connection):
        frame = wire.read_frame(connection.sock, self.broker.config.max_request_bytes)
        if frame is None:
            return False
        if connection.sasl_raw:
            if handlers.sasl_raw_token(self.broker, connection, frame):
                return True
            self._delay_failed_authentication()
            return False
        key, version, correlation_id = wire.peek_header(frame)
        if key == wire.API_VERSIONS_KEY and version > wire.APIS[key].max_version:
            connection.sock.sendall(wire.api_versions_error_frame(correlation_id))
            return True
        if not connection.authenticated and key not in _PRE_AUTH_APIS:
            LOG.info("closing unauthenticated connection from %s that sent api key %s", connection.address, key)
            self._delay_failed_authentication()
            return False  # Kafka: IllegalSaslStateException, the channel is closed
        if connection.controller and key not in wire.CONTROLLER_API_KEYS:
            return False  # controller listeners answer only the controller APIs; clients are closed
        request = wire.decode_request(frame, self.broker.config.max_versions)
        latency_ms = self.broker.state.faults(self.broker.node_id).get("latency_ms", 0)
        if latency_ms:
            time.sleep(latency_ms / 1000.0)
        response = handlers.dispatch(self.broker, connection, request)
        closing = getattr(connection, "close_after_response", False)
        if closing:
            self._delay_failed_authentication()
        if response is not None:
            connection.sock.sendall(
                wire.encode_response(request.api, request.version, request.correlation_id, response)
            )
        return not closing

    def _delay_failed_authentication(self):
        """KIP-306: a failed authentication is answered and closed only after
        ``connection.failed.authentication.delay.ms``."""
        try:
            delay_ms = int(self.broker.props.get("connection.failed.authentication.delay.ms", "100"))
        except ValueError:
            delay_ms = 100
        if delay_ms > 0:
            time.sleep(delay_ms / 1000.0)
