/**
 * One forward pass over a document's XML part (saxes: a streaming parser, linear in its input,
 * that never expands entities a document declares — `&lol9;` of a "billion laughs" file is an
 * undefined entity, an error here, never a gigabyte). Nesting deeper than MAX_XML_DEPTH or more
 * than MAX_XML_ELEMENTS elements ends the reading (`too_large`); malformed XML ends it as `failed`.
 */
import { SaxesParser } from 'saxes';
import { decodeCharset } from '../mail/shown-attachment.js';
import { MAX_XML_DEPTH, MAX_XML_ELEMENTS } from './limits.js';
import { ExtractionStop } from './stop.js';

/** Characters handed to the parser at a time, so a reader that has enough (`stopped`) ends early. */
const XML_STEP_CHARS = 64 * 1024;

/** What a reader of one part does with it; element names are local (`w:t` → `t`). */
export interface XmlReader {
  open(name: string, attributes: Record<string, string>): void;
  close(name: string): void;
  text(text: string): void;
  /** True once the reader wants nothing more (its output is full). */
  stopped(): boolean;
}

const localName = (name: string) => {
  const colon = name.indexOf(':');
  return colon === -1 ? name : name.slice(colon + 1);
};

export function readXml(bytes: Uint8Array, reader: XmlReader): void {
  const source = decodeCharset(bytes, null);
  const parser = new SaxesParser({ xmlns: false, position: false });
  let depth = 0;
  let elements = 0;
  parser.on('error', () => {
    throw new ExtractionStop('failed');
  });
  parser.on('opentag', (tag) => {
    if (++depth > MAX_XML_DEPTH || ++elements > MAX_XML_ELEMENTS) throw new ExtractionStop('too_large');
    reader.open(localName(tag.name), tag.attributes as Record<string, string>);
    if (tag.isSelfClosing) return; // saxes still emits closetag for it
  });
  parser.on('closetag', (tag) => {
    depth--;
    reader.close(localName(tag.name));
  });
  parser.on('text', (text) => reader.text(text));
  parser.on('cdata', (text) => reader.text(text));
  for (let at = 0; at < source.length; at += XML_STEP_CHARS) {
    parser.write(source.slice(at, at + XML_STEP_CHARS));
    if (reader.stopped()) return;
  }
  parser.close();
}
