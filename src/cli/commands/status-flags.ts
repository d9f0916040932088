/** The flags of `rtb status`. */
export interface StatusFlags {
  kubeconfig?: string;
  namespace: string;
  rolloutPolicy: string;
  output: 'text' | 'json';
}
