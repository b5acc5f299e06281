import type http from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Requests Node's HTTP parser refuses before any app sees them (a head over 16 KiB, bytes a
 * request line may not hold) are answered in the API's own error shape instead of Node's bare
 * 400/431 without a body, and the connection is closed.
 */

type Shape = 'database' | 'metrics';

function body(shape: Shape, status: number, message: string): string {
  return JSON.stringify(shape === 'database' ? { message } : { code: status, error: message, type: 'Validation' });
}

export function answerClientErrors(server: http.Server, shape: Shape): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const [status, reason] = tooLarge ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
    const text = body(shape, status, reason);
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  });
}
