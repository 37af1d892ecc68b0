import {
  checkHostAndOrigin,
  generateToken,
  getAllowedHosts,
  isAuthorized,
  isLoopbackHost,
  validateListenHost,
  validateToken,
} from '../../src/mcp/http-guard';

describe('MCP HTTP guard', () => {
  test('bearer tokens: exact match only', () => {
    const token = generateToken();
    expect(isAuthorized(`Bearer ${token}`, token)).toBe(true);
    expect(isAuthorized(`bearer ${token}`, token)).toBe(true);
    expect(isAuthorized(undefined, token)).toBe(false);
    expect(isAuthorized('', token)).toBe(false);
    expect(isAuthorized(`Bearer ${token}x`, token)).toBe(false);
    expect(isAuthorized(`Bearer ${token.slice(1)}`, token)).toBe(false);
    expect(isAuthorized(`Basic ${token}`, token)).toBe(false);
    expect(isAuthorized(`Bearer ${token} extra`, token)).toBe(false);
    expect(isAuthorized(token, token)).toBe(false);
  });

  test('configured tokens must be long enough and header-safe', () => {
    expect(validateToken('a'.repeat(16))).toBe('a'.repeat(16));
    expect(() => validateToken('short')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_MCP_TOKEN_INVALID' }));
    expect(() => validateToken('has a space in it!!')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_MCP_TOKEN_INVALID' }));
    expect(() => validateToken('ünïcødé-token-value')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_MCP_TOKEN_INVALID' }));
  });

  test('loopback addresses; anything else needs --allow-remote', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]']) expect(isLoopbackHost(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '192.168.1.10', 'example.com', '10.0.0.1']) expect(isLoopbackHost(host)).toBe(false);
    expect(() => validateListenHost('0.0.0.0', false)).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_MCP_REMOTE_REFUSED' }));
    expect(() => validateListenHost('0.0.0.0', true)).not.toThrow();
    expect(() => validateListenHost('127.0.0.1', false)).not.toThrow();
  });

  test('allowed hosts: the loopback names with the port, the listen address, and extra names', () => {
    expect([...getAllowedHosts('127.0.0.1', 7337)].sort()).toEqual(['127.0.0.1:7337', '[::1]:7337', 'localhost:7337']);
    expect(getAllowedHosts('192.168.1.10', 8000).has('192.168.1.10:8000')).toBe(true);
    expect(getAllowedHosts('0.0.0.0', 8000).has('0.0.0.0:8000')).toBe(false);
    const extra = getAllowedHosts('0.0.0.0', 8000, ['mcp.example.com', 'Proxy.Example.com:443', '[fd00::1]:8000']);
    expect(extra.has('mcp.example.com:8000')).toBe(true);
    expect(extra.has('proxy.example.com:443')).toBe(true);
    expect(extra.has('[fd00::1]:8000')).toBe(true);
  });

  test('Host and Origin checks (DNS rebinding)', () => {
    const allowed = getAllowedHosts('127.0.0.1', 7337);
    expect(checkHostAndOrigin('127.0.0.1:7337', undefined, allowed)).toBeUndefined();
    expect(checkHostAndOrigin('LOCALHOST:7337', 'http://localhost:7337', allowed)).toBeUndefined();
    expect(checkHostAndOrigin('[::1]:7337', 'http://[::1]:7337', allowed)).toBeUndefined();
    expect(checkHostAndOrigin(undefined, undefined, allowed)).toMatch(/Host header is missing/);
    expect(checkHostAndOrigin('attacker.example:7337', undefined, allowed)).toMatch(/Host header/);
    expect(checkHostAndOrigin('localhost:7338', undefined, allowed)).toMatch(/Host header/);
    expect(checkHostAndOrigin('localhost', undefined, allowed)).toMatch(/Host header/);
    expect(checkHostAndOrigin('localhost:7337', 'http://attacker.example', allowed)).toMatch(/Origin/);
    expect(checkHostAndOrigin('localhost:7337', 'http://localhost:9999', allowed)).toMatch(/Origin/);
    expect(checkHostAndOrigin('localhost:7337', 'null', allowed)).toMatch(/Origin/);
    expect(checkHostAndOrigin('localhost:7337', 'file://localhost:7337', allowed)).toMatch(/Origin/);
  });
});
