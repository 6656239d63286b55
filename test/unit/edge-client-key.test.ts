/** The keys the SMTP receiver counts connections against (docs/edge.md "SMTP"): an IPv4 address or IPv6 /64, and its /24 or /48. */
import t from 'tap';
import { clientKey, networkKey } from '../../src/edge/smtp.js';

t.test('IPv4 clients count per address, IPv6 clients per /64', async (t) => {
  t.equal(clientKey('127.0.0.1'), '127.0.0.1');
  t.equal(clientKey('::ffff:192.0.2.7'), '192.0.2.7', 'an IPv4 client on a dual-stack socket is its IPv4 address');
  t.equal(clientKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(clientKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64', 'every address of one /64 is one client');
  t.equal(clientKey('2001:0db8:0001:0002::9'), '2001:db8:1:2::/64', 'leading zeros do not make another client');
  t.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(clientKey('::1'), '0:0:0:0::/64');
  t.not(clientKey('2001:db8:1:3::1'), clientKey('2001:db8:1:2::1'), 'another /64 is another client');
});

t.test('the network a client shares its allowance with: an IPv4 /24, an IPv6 /48', async (t) => {
  t.equal(networkKey('127.0.0.1'), '127.0.0.0/24');
  t.equal(networkKey('127.0.0.250'), networkKey('127.0.0.1'), 'every address of one /24 is one network');
  t.not(networkKey('127.0.1.1'), networkKey('127.0.0.1'), 'another /24 is another network');
  t.equal(networkKey('::ffff:192.0.2.7'), '192.0.2.0/24', 'an IPv4 client on a dual-stack socket');
  t.equal(networkKey('2001:db8:1:2:aaaa::1'), '2001:db8:1::/48');
  t.equal(networkKey('2001:db8:1:ffff::1'), networkKey('2001:0db8:0001:0002::9'), 'every /64 of one /48 is one network');
  t.not(networkKey('2001:db8:2::1'), networkKey('2001:db8:1::1'), 'another /48 is another network');
});
