'use strict';
/*
 * Server-sent events read from a fetch() response, so that a request can carry the Authorization and Last-Event-ID
 * headers (EventSource sends neither of its own accord). The parser follows the HTML standard's event-stream
 * interpretation: lines end in CRLF, LF or CR; a blank line dispatches the event; "field: value" with one optional
 * space; lines starting with ':' are comments; data lines are joined with '\n'.
 */
window.KdapackSse = (function () {
  function Parser(onEvent) {
    let pending = '';
    let data = [];
    let type = '';
    let id = null;

    function line(text) {
      if (text === '') {
        if (data.length > 0) {
          onEvent({type: type || 'message', data: data.join('\n'), id: id});
        }
        data = [];
        type = '';
        return;
      }
      if (text.charAt(0) === ':') {
        return;
      }
      const colon = text.indexOf(':');
      const field = colon < 0 ? text : text.slice(0, colon);
      let value = colon < 0 ? '' : text.slice(colon + 1);
      if (value.charAt(0) === ' ') {
        value = value.slice(1);
      }
      if (field === 'data') {
        data.push(value);
      } else if (field === 'event') {
        type = value;
      } else if (field === 'id' && value.indexOf('\u0000') < 0) {
        id = value;
      }
    }

    /** Feeds decoded text; whole lines are interpreted, a partial one waits for the rest. */
    this.push = function (text) {
      pending += text;
      const lines = pending.split(/\r\n|\r|\n/);
      // A CR at the very end may be the first half of a CRLF: keep it (and the partial last line) for later.
      let keep = lines.pop();
      if (pending.endsWith('\r')) {
        keep = lines.pop() + '\r';
      }
      pending = keep;
      lines.forEach(line);
    };

    /** The stream ended: a line held back for a possible LF after its CR was complete after all. */
    this.finish = function () {
      if (pending.endsWith('\r')) {
        line(pending.slice(0, -1));
        pending = '';
      }
    };
  }

  /**
   * Reads the event stream of `response` to its end, calling onEvent({type, data, id}) for each event.
   * Resolves when the server ends the response; rejects when the connection fails or `signal` aborts it.
   */
  async function read(response, onEvent) {
    const parser = new Parser(onEvent);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) {
        parser.finish();
        return;
      }
      parser.push(chunk.value);
    }
  }

  return {Parser: Parser, read: read};
})();
