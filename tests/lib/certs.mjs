// Certificates made at test time with the openssl command: a CA and leaves
// it signs (upstreams, tls.test.mjs), or a self-signed leaf (the clients'
// side, tls_clients.test.mjs). Each returns file paths inside `dir`.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export function certMaker(dir) {
  const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  return {
    // a CA: its certificate's path (its key is `${name}.key` beside it)
    ca(name) {
      openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`,
        '-days', '2', '-subj', `/CN=${name}`);
      return path.join(dir, `${name}.pem`);
    },
    // a leaf for `san` (e.g. 'DNS:localhost,IP:127.0.0.1') signed by caName
    cert(name, san, caName = 'ca') {
      writeFileSync(path.join(dir, `${name}.ext`), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\n`);
      openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
      openssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${caName}.pem`, '-CAkey', `${caName}.key`, '-CAcreateserial',
        '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`);
      return { cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}.key`) };
    },
    // a self-signed leaf for `san`; a client trusts it by passing it as its CA
    selfSigned(name, san = 'DNS:localhost,IP:127.0.0.1') {
      openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`,
        '-days', '2', '-subj', `/CN=${name}`, '-addext', `subjectAltName=${san}`);
      return { cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}.key`) };
    },
  };
}
