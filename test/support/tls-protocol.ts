import { connect, type ConnectionOptions, type SecureVersion } from 'node:tls';

/** Where to connect and with what, beyond the one TLS version offered. */
export type TlsProtocolTarget = Pick<
  ConnectionOptions,
  'host' | 'port' | 'ca' | 'cert' | 'key' | 'rejectUnauthorized'
>;

/**
 * The protocol a client offering only `version` agrees on (`TLSv1.3`…), or `refused: <reason>`
 * when the handshake fails.
 */
export function tlsProtocol(target: TlsProtocolTarget, version: SecureVersion): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', ...target, minVersion: version, maxVersion: version });
    socket.on('secureConnect', () => {
      resolve(socket.getProtocol() ?? 'none');
      socket.destroy();
    });
    socket.on('error', (error: Error) => {
      resolve(`refused: ${error.message}`);
    });
  });
}
