import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { SET_VERSION_ANNOTATION } from '../api/runtime-bootstrapper.js';
import type { Reflector } from '../kube/reflector.js';
import type { ConfigHolder, ConfigOffer } from './config-holder.js';

/**
 * Feeds the webhook ConfigMap's key into the holder whenever the ConfigMap changes (the
 * reflector watches just that one object through a name field selector). A deleted ConfigMap
 * or a missing key keeps the last good configuration.
 */
export function connectConfigMapSource(input: {
  readonly reflector: Reflector<V1ConfigMap>;
  readonly key: string;
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  /** Told what became of each ConfigMap offered (the status report). */
  readonly onOffer?: (cm: V1ConfigMap, offer: ConfigOffer) => void;
}): void {
  const { reflector, key, holder, logger, onOffer } = input;
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
    const offer = holder.offer(text, `${where}#${key}`, cm.metadata?.annotations?.[SET_VERSION_ANNOTATION]);
    onOffer?.(cm, offer);
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
