import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Reflector } from '../kube/reflector.js';
import type { SetRevision } from './set-revision.js';

/**
 * Feeds the webhook ConfigMap's key, with its annotations, into the holder whenever the
 * ConfigMap changes (the reflector watches just that one object through a name field selector),
 * through the set revision that computes the revision it is taken under (./set-revision.ts). A
 * deleted ConfigMap or a missing key keeps the last good configuration.
 */
export function connectConfigMapSource(input: {
  readonly reflector: Reflector<V1ConfigMap>;
  readonly key: string;
  readonly revision: SetRevision;
  readonly logger: Logger;
}): void {
  const { reflector, key, revision, logger } = input;
  const offer = (cm: V1ConfigMap): void => {
    const where = `configmap ${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
    const text = cm.data?.[key];
    if (text === undefined) {
      logger.error(
        { source: where, key },
        'the ConfigMap has no such key; keeping the last good configuration',
      );
      return;
    }
    revision.configMap({ text, source: `${where}#${key}`, annotations: cm.metadata?.annotations });
  };
  reflector.addEventHandler({
    onAdd: offer,
    onUpdate: (_old, cm) => {
      offer(cm);
    },
    onDelete: (cm) => {
      logger.error(
        { source: `configmap ${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}` },
        'the webhook ConfigMap was deleted; keeping the last good configuration',
      );
    },
  });
}
