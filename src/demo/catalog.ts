/**
 * The demo's vocabulary: teams, asset kinds and, per check type, the issues it can report
 * (summary, description, score, CWE, labels). Modelled on what Vulcan checks report.
 */

export interface CatalogIssue {
  summary: string;
  description: string;
  score: number;
  cwe: number;
  labels: string[];
  recommendations: string[];
  /** Probability that a scan finds it where it was absent, and fixes it where it was present. */
  appear: number;
  fix: number;
  /** Reported per affected resource (several findings of one issue on one target). */
  perResource?: string[];
}

export interface CheckType {
  name: string;
  options: string;
  /** Which asset kinds it scans. */
  kinds: AssetKind[];
  issues: CatalogIssue[];
}

export type AssetKind = 'hostname' | 'web' | 'ip' | 'repository' | 'image' | 'aws';

export const TEAMS = ['payments', 'identity', 'platform', 'storefront', 'data', 'mobile'] as const;

const issue = (summary: string, score: number, cwe: number, labels: string[], extra: Partial<CatalogIssue> = {}): CatalogIssue => ({
  summary,
  description: `${summary} was detected on the asset.`,
  score,
  cwe,
  labels,
  recommendations: [`Remediate: ${summary.toLowerCase()}.`],
  appear: 0.06,
  fix: 0.25,
  ...extra,
});

export const CHECK_TYPES: CheckType[] = [
  {
    name: 'vulcan-tls',
    options: '{}',
    kinds: ['hostname', 'web'],
    issues: [
      issue('TLS Version 1.0 Protocol Detection', 6.5, 326, ['tls', 'issue']),
      issue('Weak Cipher Suites Supported', 5.3, 326, ['tls']),
      issue('Certificate Expires Soon', 3.9, 298, ['tls', 'certificate'], { appear: 0.04, fix: 0.6 }),
    ],
  },
  {
    name: 'vulcan-tls',
    options: '{"port":8443}',
    kinds: ['hostname'],
    issues: [issue('TLS Version 1.0 Protocol Detection', 6.5, 326, ['tls', 'issue'])],
  },
  {
    name: 'vulcan-nessus',
    options: '{"policy":"basic"}',
    kinds: ['hostname', 'ip'],
    issues: [
      issue('OpenSSH < 9.3p2 Remote Code Execution', 9.8, 94, ['ssh', 'cve'], { appear: 0.02, fix: 0.4 }),
      issue('SMB Signing not required', 5.3, 287, ['smb']),
      issue('ICMP Timestamp Request Remote Date Disclosure', 0, 200, ['informational'], { fix: 0.05 }),
      issue('Apache HTTP Server 2.4.x < 2.4.58 Multiple Vulnerabilities', 7.5, 400, ['apache', 'cve'], { appear: 0.03 }),
    ],
  },
  {
    name: 'vulcan-zap',
    options: '{"depth":2}',
    kinds: ['web'],
    issues: [
      issue('Cross Site Scripting (Reflected)', 6.1, 79, ['web', 'owasp'], { perResource: ['/search', '/login', '/profile'] }),
      issue('SQL Injection', 9.1, 89, ['web', 'owasp'], { appear: 0.015, fix: 0.5 }),
      issue('Missing Anti-clickjacking Header', 4.3, 1021, ['web', 'headers'], { appear: 0.1, fix: 0.1 }),
    ],
  },
  {
    name: 'vulcan-exposed-http',
    options: '{}',
    kinds: ['hostname', 'web', 'ip'],
    issues: [
      issue('Exposed Admin Panel', 8.2, 284, ['exposure'], { appear: 0.03, fix: 0.35 }),
      issue('Directory Listing Enabled', 5.0, 548, ['exposure', 'web']),
    ],
  },
  {
    name: 'vulcan-dkim',
    options: '{}',
    kinds: ['hostname'],
    issues: [issue('DKIM Not Configured', 2.0, 345, ['email'], { fix: 0.08 })],
  },
  {
    name: 'vulcan-spf',
    options: '{}',
    kinds: ['hostname'],
    issues: [issue('SPF Policy Too Permissive', 3.5, 345, ['email'], { fix: 0.1 })],
  },
  {
    name: 'vulcan-trivy',
    options: '{"severity":"LOW"}',
    kinds: ['image', 'repository'],
    issues: [
      issue('openssl: X.509 Email Address Buffer Overflow', 7.5, 120, ['cve', 'dependency']),
      issue('glibc: Buffer Overflow in getaddrinfo', 8.8, 787, ['cve', 'dependency'], { appear: 0.04 }),
      issue('lodash: Prototype Pollution', 9.1, 1321, ['cve', 'dependency'], { appear: 0.05, fix: 0.3 }),
      issue('zlib: Heap Overflow in inflate', 9.8, 787, ['cve', 'dependency'], { appear: 0.01, fix: 0.5 }),
      issue('Outdated Base Image', 0, 1104, ['informational', 'dependency'], { appear: 0.1, fix: 0.1 }),
    ],
  },
  {
    name: 'vulcan-github-alerts',
    options: '{}',
    kinds: ['repository'],
    issues: [
      issue('Secret Committed to Repository', 8.6, 798, ['secrets'], { appear: 0.02, fix: 0.3 }),
      issue('Vulnerable Dependency: jackson-databind', 7.5, 502, ['cve', 'dependency']),
    ],
  },
  {
    name: 'vulcan-aws-trusted-advisor',
    options: '{}',
    kinds: ['aws'],
    issues: [
      issue('S3 Bucket Permissions', 7.0, 732, ['cloud', 'aws'], { perResource: ['arn:aws:s3:::logs', 'arn:aws:s3:::backups'] }),
      issue('IAM Access Key Rotation', 3.0, 324, ['cloud', 'aws'], { fix: 0.1 }),
      issue('Security Groups - Unrestricted Access', 5.9, 284, ['cloud', 'aws']),
    ],
  },
];
