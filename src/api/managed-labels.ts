/** Label that marks every object rt-bootstrapper writes, so it can find, repair and remove them. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** Value of {@link MANAGED_BY_LABEL} on our objects. */
export const MANAGED_BY_VALUE = 'rt-bootstrapper';
/** Annotation on a pull Secret copy naming the source it was copied from. */
export const COPIED_FROM_ANNOTATION = 'rt-bootstrapper.kyma-project.io/copied-from';
