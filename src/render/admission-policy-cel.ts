/**
 * The CEL of the admission policy: src/mutation's pipeline for a CREATE, written against the
 * parameters of ./admission-policy-params.ts (docs/admission-policy.md). Every expression reads
 * the Pod as the API server hands it to admission (defaulted, validated shape), computes from the
 * input Pod alone, and the one JSONPatch puts the Pod where mutatePod would.
 *
 * CEL here has no let: `[value].map(name, body)[0]` binds a name. Map literals hold one value
 * type, so values read off the Pod (dyn) are wrapped in string() or dyn().
 */
import {
  ANNOTATION_DEFAULTED,
  ANNOTATION_MODIFIED,
  ENV_FIPS_MODE,
  ENV_FIPS_MODE_LEGACY,
  ENV_LANDSCAPE,
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALL,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
  FEATURE_SET_LANDSCAPE,
  FEATURES,
} from '../api/webhook-features.js';
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL, CTB_MOUNTED_VALUE } from '../api/trust-stamp.js';
import { ORIGINAL_IMAGES_ANNOTATION, REVISION_ANNOTATION, REVISION_LABEL } from '../api/workload-health.js';
import { CTB_DEFAULT_MODE } from '../mutation/add-cluster-trust-bundle.js';
import {
  DOCKER_HUB_LEGACY_REGISTRY,
  IMAGE_ID_RE,
  KNOWN_DIGEST_RE,
  PATH_COMPONENT_RE,
  REGISTRY_HOST_RE,
  TAG_RE,
  DOCKER_HUB_REGISTRY,
  MAX_REFERENCE_LENGTH,
  NAME_MAX_LENGTH,
} from '../image/image-reference.js';
import { PARAM_KEYS as K } from './admission-policy-params.js';

/**
 * The most containers and init containers together a Pod may have for the policy to mutate it;
 * a larger Pod is left to the webhook (a matchCondition), which bounds the CEL's cost.
 */
export const POLICY_MAX_CONTAINERS = 64;
/** The most env entries or volume mounts of one container, and volumes of a Pod, likewise. */
export const POLICY_MAX_LIST = 128;

/** A CEL string literal of a constant (our own ASCII keys and patterns). */
export function celString(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** `[value].map(name, body)[0]`: body with `name` bound to value. */
function bind(name: string, value: string, body: string): string {
  return `[${value}].map(${name}, ${body})[0]`;
}

const param = (key: string): string => `string(params.data[${celString(key)}])`;
const hasParam = (key: string): string => `(${celString(key)} in params.data)`;
const pointer = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');
// The same in CEL, for keys computed there.
const escaped = (key: string): string => `${key}.replace('~', '~0').replace('/', '~1')`;

// distribution/reference's grammar, the expressions of ../image/image-reference.ts (RE2 reads
// them alike: linear time).
const unanchored = (re: RegExp): string => re.source.replace(/^\^/, '').replace(/\$$/, '');
const HOST_RE = REGISTRY_HOST_RE.source;
const PATH_RE = `^${unanchored(PATH_COMPONENT_RE)}(?:/${unanchored(PATH_COMPONENT_RE)})*$`;
const DIGEST_RE = `^(?:${Object.entries(KNOWN_DIGEST_RE)
  .map(([algorithm, encoding]) => `${algorithm}:${unanchored(encoding)}`)
  .join('|')})$`;
// A name JavaScript orders before all others in an object (an array index).
const INDEX_NAME_RE = '^(?:0|[1-9][0-9]*)$';

/**
 * Whether `variables.overrideExclusions` names the image read as `registry`, `repo` and its tag
 * and digest (createExclusionMatcher): a repository prefix at a path boundary, the repositories
 * below a path, or an image whose named tag (no tag nor digest reads as `latest`) and digest are
 * the image's.
 */
const EXCLUDED =
  "variables.overrideExclusions.exists(e, e[0] == registry && (e[2] == 'repository' ? " +
  "(repo == e[1] || repo.startsWith(e[1] + '/')) : e[2] == 'below' ? repo.startsWith(e[1] + '/') : " +
  "(repo == e[1] && (e[3] == '' || e[3] == (colon > slash ? tag : at >= 0 ? '' : 'latest')) && (e[4] == '' || e[4] == digest))))";

/**
 * The image `img` rewritten by `variables.overrides`, or '' where the webhook leaves it as it is
 * (no override matches, already at a target, excluded, or a reference runtimes would not read).
 */
function rewriteExpression(img: string): string {
  const tail = bind(
    'o',
    'variables.overrides.filter(o, o[0] == registry)[0]',
    bind(
      'pre',
      "o[3] == '' ? '' : o[3] + '/'",
      `size(pre) + size(repo) > ${NAME_MAX_LENGTH} ? '' : ` +
        bind(
          'out',
          "o[1] + '/' + pre + repo + (colon > slash ? ':' + tag : '') + (at >= 0 ? '@' + digest : '')",
          `out == ${img} ? '' : out`,
        ),
    ),
  );
  const afterRepo =
    `size(repo) > ${NAME_MAX_LENGTH} ? '' : ` +
    "variables.overrides.exists(o, registry == o[2] && (o[3] == '' || repo == o[3] || repo.startsWith(o[3] + '/'))) ? '' : " +
    `!variables.overrides.exists(o, o[0] == registry) ? '' : ${EXCLUDED} ? '' : ${tail}`;
  const afterPath = bind(
    'registry',
    `!explicit || first == ${celString(DOCKER_HUB_LEGACY_REGISTRY)} ? ${celString(DOCKER_HUB_REGISTRY)} : first`,
    bind(
      'repo',
      `registry == ${celString(DOCKER_HUB_REGISTRY)} && !path.contains('/') ? 'library/' + path : path`,
      afterRepo,
    ),
  );
  const afterRest = bind(
    'fs',
    "rest.indexOf('/')",
    bind(
      'first',
      "fs < 0 ? '' : rest.substring(0, fs)",
      bind(
        'explicit',
        "fs >= 0 && (first.contains('.') || first.contains(':') || first == 'localhost' || first.lowerAscii() != first)",
        `explicit && !first.matches(${celString(HOST_RE)}) ? '' : ` +
          bind(
            'path',
            'explicit ? rest.substring(fs + 1) : rest',
            `!path.matches(${celString(PATH_RE)}) ? '' : ${afterPath}`,
          ),
      ),
    ),
  );
  const afterName = bind(
    'slash',
    "name.lastIndexOf('/')",
    bind(
      'colon',
      "name.lastIndexOf(':')",
      bind(
        'rest',
        'colon > slash ? name.substring(0, colon) : name',
        bind(
          'tag',
          "colon > slash ? name.substring(colon + 1) : ''",
          `colon > slash && !tag.matches(${celString(TAG_RE.source)}) ? '' : rest == '' ? '' : ${afterRest}`,
        ),
      ),
    ),
  );
  return (
    `size(${img}) == 0 || size(${img}) > ${MAX_REFERENCE_LENGTH} || ${img}.matches(${celString(IMAGE_ID_RE.source)}) ? '' : ` +
    bind(
      'at',
      `${img}.indexOf('@')`,
      bind(
        'name',
        `at < 0 ? ${img} : ${img}.substring(0, at)`,
        bind(
          'digest',
          `at < 0 ? '' : ${img}.substring(at + 1)`,
          `at >= 0 && !digest.matches(${celString(DIGEST_RE)}) ? '' : ${afterName}`,
        ),
      ),
    )
  );
}

/** What one annotation level says about feature `f`: its own key shadows `all`; '' when silent. */
function says(level: string, f: string): string {
  return (
    `(${f} in ${level} ? string(${level}[${f}]) : ` +
    `${celString(FEATURE_ALL)} in ${level} ? string(${level}[${celString(FEATURE_ALL)}]) : '')`
  );
}

// Per container its env names once (`n`) and the first index of each wanted name (`f`), so
// each entry costs a lookup in three: the whole stays linear in the entries.
const ENV_LAST = 'size(n) - 1 - j';
const ENV_OPERATIONS =
  "variables.all.transformList(i, c, variables.envChanged[i], [(i < variables.containerCount ? '/spec/containers/' + string(i) : " +
  "'/spec/initContainers/' + string(i - variables.containerCount)) + '/env'].map(p, " +
  "(!has(c.env) || size(c.env) == 0 ? ['set ' + p] : [c.env.map(e, string(e.name))].map(n, " +
  '[variables.envNames.map(w, n.indexOf(w))].map(f, ' +
  'variables.env.transformList(k, w, f[k] >= 0 && ' +
  '![c.env[f[k]]].all(e, has(e.value) && e.value == w[1] && !has(e.valueFrom)), ' +
  "'replace ' + p + '/' + string(f[k]) + ' ' + string(k)) + " +
  `n.transformList(j, e, n[${ENV_LAST}] in variables.envNames && !(${ENV_LAST} in f), ` +
  `'remove ' + p + '/' + string(${ENV_LAST})) + ` +
  "variables.env.transformList(k, w, f[k] < 0, 'add ' + p + '/- ' + string(k)))[0])[0]).join(',')" +
  ")[0]).join(',').split(',').filter(d, d != '')";

/** One policy variable. */
export interface PolicyVariable {
  readonly name: string;
  readonly expression: string;
}

const sel = (feature: string): string => `(${celString(feature)} in variables.selected)`;

/** The trust-bundle volume exactly as the webhook adds it (jsonEqual in add-cluster-trust-bundle.ts). */
const EXACT_VOLUME =
  `has(v.projected) && has(v.projected.defaultMode) && v.projected.defaultMode == ${CTB_DEFAULT_MODE} && ` +
  'has(v.projected.sources) && size(v.projected.sources) == 1 && ' +
  'has(v.projected.sources[0].clusterTrustBundle) && ' +
  `[v.projected.sources[0].clusterTrustBundle].all(t, has(t.name) && t.name == ${param(K.trustBundleName)} && ` +
  `has(t.path) && t.path == ${param(K.trustBundlePath)} && !has(t.signerName) && !has(t.labelSelector) && !has(t.optional))`;

/**
 * The policy's variables, in order (each may read the earlier ones). `all` is the Pod's containers
 * then its init containers; per-container lists run parallel to it.
 */
export function policyVariables(): PolicyVariable[] {
  const annotations = 'variables.annotations';
  const labels = 'variables.labels';
  const nsAnnotations = 'variables.namespaceAnnotations';
  const vn = param(K.trustBundleVolume);
  return [
    {
      name: 'annotations',
      expression: 'has(object.metadata.annotations) ? object.metadata.annotations : {}',
    },
    { name: 'labels', expression: 'has(object.metadata.labels) ? object.metadata.labels : {}' },
    {
      name: 'namespaceAnnotations',
      expression:
        'namespaceObject != null && has(namespaceObject.metadata.annotations) ? namespaceObject.metadata.annotations : {}',
    },
    { name: 'available', expression: `${param(K.available)}.split(' ')` },
    {
      name: 'namespaceDefaults',
      expression:
        `(${celString(K.namespacePrefix)} + request.namespace) in params.data ? ` +
        `string(params.data[${celString(K.namespacePrefix)} + request.namespace]).split(' ') : []`,
    },
    {
      // selectFeatures (src/mutation/features.ts): available, not opted out by the Pod, and opted
      // in by the Pod, the config's namespace list or the Namespace.
      name: 'selected',
      expression:
        `[${FEATURES.map(celString).join(', ')}].filter(f, f in variables.available && ` +
        `${says(annotations, 'f')} != 'false' && (${says(annotations, 'f')} == 'true' || ` +
        `f in variables.namespaceDefaults || ${says(nsAnnotations, 'f')} == 'true'))`,
    },
    {
      name: 'all',
      expression:
        '(has(object.spec.containers) ? object.spec.containers : []) + ' +
        '(has(object.spec.initContainers) ? object.spec.initContainers : [])',
    },
    {
      name: 'containerCount',
      expression: 'has(object.spec.containers) ? size(object.spec.containers) : 0',
    },
    {
      name: 'overrides',
      expression: `${param(K.overrides)} == '' ? [] : ${param(K.overrides)}.split('\\n').map(l, l.split(' '))`,
    },
    {
      // Absent from the parameters of a config without exclusions (and of sets older than them).
      name: 'overrideExclusions',
      expression: `${hasParam(K.overrideExclusions)} ? ${param(K.overrideExclusions)}.split('\\n').map(l, l.split(' ')) : []`,
    },
    {
      name: 'images',
      expression:
        `!${sel(FEATURE_ALTER_IMG_REGISTRY)} ? variables.all.map(c, '') : ` +
        `variables.all.map(c, !has(c.image) ? '' : ${bind('img', 'string(c.image)', rewriteExpression('img'))})`,
    },
    {
      name: 'env',
      expression:
        `(${sel(FEATURE_SET_FIPS_MODE)} ? [[${celString(ENV_FIPS_MODE)}, 'true'], [${celString(ENV_FIPS_MODE_LEGACY)}, 'true']] : []) + ` +
        `(${sel(FEATURE_SET_LANDSCAPE)} && ${hasParam(K.landscape)} ? [[${celString(ENV_LANDSCAPE)}, ${param(K.landscape)}]] : [])`,
    },
    { name: 'envNames', expression: 'variables.env.map(w, w[0])' },
    {
      // ensureEnv (src/mutation/ensure-env.ts): set where the env is empty, a wanted variable
      // missing, its first entry not exactly the value, or doubled.
      name: 'envChanged',
      expression:
        'variables.all.map(c, size(variables.env) > 0 && (!has(c.env) || size(c.env) == 0 || ' +
        'variables.env.exists(w, !c.env.exists(e, e.name == w[0]) || size(c.env.filter(e, e.name == w[0])) > 1 || ' +
        '![c.env.filter(e, e.name == w[0])[0]].all(e, has(e.value) && e.value == w[1] && !has(e.valueFrom)))))',
    },
    {
      // ensureEnv's result as operations `op path [index into variables.env]`, all containers'
      // in one list: the first entry of each wanted name replaced where it is not exactly the
      // value, later ones removed from the back, missing ones appended. By index, never by
      // writing entries back: from 1.36 on CEL holds typed entries a patch value cannot carry,
      // and 1.34's CEL has no flatten, so the lists are joined as text.
      name: 'envOperations',
      expression: ENV_OPERATIONS,
    },
    {
      name: 'trustBundle',
      expression: `${sel(FEATURE_ADD_CLUSTER_TRUST_BUNDLE)} && ${hasParam(K.trustBundleName)}`,
    },
    { name: 'volumes', expression: 'has(object.spec.volumes) ? object.spec.volumes : []' },
    {
      // The volume of the configured name, when there is one, must be exactly ours.
      name: 'volumeFits',
      expression: `!variables.trustBundle || variables.volumes.filter(v, v.name == ${vn}).all(v, ${EXACT_VOLUME})`,
    },
    {
      name: 'volumeMissing',
      expression: `variables.trustBundle && !variables.volumes.exists(v, v.name == ${vn})`,
    },
    {
      // A container that mounts nothing at the path gets the mount.
      name: 'mountTargets',
      expression:
        'variables.all.map(c, variables.trustBundle && variables.volumeFits && ' +
        `!(has(c.volumeMounts) && c.volumeMounts.exists(m, has(m.mountPath) && string(m.mountPath).matches(${param(K.trustBundleMountPattern)}))))`,
    },
    { name: 'mounted', expression: 'variables.mountTargets.exists(t, t)' },
    {
      // stampTrustBundle's carriesMount, after the mounts are added.
      name: 'carriesMount',
      expression:
        'variables.trustBundle && (variables.mounted || (' +
        `variables.volumes.exists(v, v.name == ${vn} && has(v.projected) && has(v.projected.sources) && ` +
        `v.projected.sources.exists(s, has(s.clusterTrustBundle) && has(s.clusterTrustBundle.name) && s.clusterTrustBundle.name == ${param(K.trustBundleName)})) && ` +
        `variables.all.exists(c, has(c.volumeMounts) && c.volumeMounts.exists(m, has(m.name) && m.name == ${vn}))))`,
    },
    {
      name: 'pullSecret',
      expression:
        `${sel(FEATURE_ADD_IMG_PULL_SECRET)} && !(has(object.spec.imagePullSecrets) && ` +
        `object.spec.imagePullSecrets.exists(r, has(r.name) && r.name == ${param(K.pullSecret)}))`,
    },
    {
      // The trust-bundle stamp: label, and the hash where known (removed where not).
      name: 'stampSets',
      expression: `variables.carriesMount && ${hasParam(K.trustBundleHash)} ? [[${celString(CTB_HASH_ANNOTATION)}, ${param(K.trustBundleHash)}]] : []`,
    },
    {
      name: 'stampRemoves',
      expression: `variables.carriesMount && !${hasParam(K.trustBundleHash)} && ${celString(CTB_HASH_ANNOTATION)} in ${annotations} ? [${celString(CTB_HASH_ANNOTATION)}] : []`,
    },
    {
      name: 'stampLabel',
      expression: `variables.carriesMount && !(${celString(CTB_MOUNTED_LABEL)} in ${labels} && ${labels}[${celString(CTB_MOUNTED_LABEL)}] == ${celString(CTB_MOUNTED_VALUE)})`,
    },
    {
      name: 'changed',
      expression:
        "variables.images.exists(i, i != '') || variables.pullSecret || variables.envChanged.exists(e, e) || " +
        'variables.mounted || size(variables.stampSets) > 0 || size(variables.stampRemoves) > 0 || variables.stampLabel',
    },
    { name: 'revision', expression: `${hasParam(K.revision)} ? ${param(K.revision)} : ''` },
    {
      // Container name -> image asked for, of the images rewritten, as stampRevision writes it.
      name: 'originals',
      expression:
        "variables.all.transformList(i, c, variables.images[i] != '', '\"' + string(c.name) + '\":\"' + string(c.image) + '\"')",
    },
    {
      // Where CEL cannot write what the webhook writes, the Pod is left alone (docs/admission-policy.md):
      // the stamp the Pod brings must be read as JSON, or JavaScript orders the original images.
      name: 'deferred',
      expression:
        `variables.revision != '' && size(variables.selected) > 0 && (${celString(ORIGINAL_IMAGES_ANNOTATION)} in ${annotations} || ` +
        `(variables.changed && size(variables.originals) > 1 && variables.all.exists(c, string(c.name).matches(${celString(INDEX_NAME_RE)}))))`,
    },
    {
      // stampRevision's and scrubRevision's keys: [key, value], value '' to remove.
      name: 'revisionAnnotations',
      expression:
        `variables.changed && variables.revision != '' ? ` +
        `[[${celString(REVISION_ANNOTATION)}, variables.revision]] + ` +
        `(size(variables.originals) > 0 ? [[${celString(ORIGINAL_IMAGES_ANNOTATION)}, '{' + variables.originals.join(',') + '}']] : ` +
        `[[${celString(ORIGINAL_IMAGES_ANNOTATION)}, '']]) : ` +
        // Unchanged under a set: a CREATE that carries exactly our stamp keeps it.
        `!variables.changed && size(variables.selected) > 0 && variables.revision != '' && ` +
        `${celString(REVISION_ANNOTATION)} in ${annotations} && ${annotations}[${celString(REVISION_ANNOTATION)}] == variables.revision && ` +
        `(${hasParam(K.revisionLabel)} ? ${celString(REVISION_LABEL)} in ${labels} && ${labels}[${celString(REVISION_LABEL)}] == ${param(K.revisionLabel)} : !(${celString(REVISION_LABEL)} in ${labels})) ? [] : ` +
        `[[${celString(REVISION_ANNOTATION)}, ''], [${celString(ORIGINAL_IMAGES_ANNOTATION)}, '']]`,
    },
    {
      name: 'revisionLabel',
      expression:
        `variables.changed && variables.revision != '' && ${hasParam(K.revisionLabel)} ? ${param(K.revisionLabel)} : ` +
        `size(variables.revisionAnnotations) == 0 ? (${celString(REVISION_LABEL)} in ${labels} ? string(${labels}[${celString(REVISION_LABEL)}]) : '') : ''`,
    },
    {
      // Every annotation to put ([key, value]) and to remove (key), present or not.
      name: 'annotationSets',
      expression: `(variables.changed ? [${[ANNOTATION_DEFAULTED, ANNOTATION_MODIFIED]
        .map((k) => `[${celString(k)}, 'true']`)
        .join(', ')}] : []) + variables.stampSets + variables.revisionAnnotations.filter(a, a[1] != '')`,
    },
    {
      name: 'annotationRemoves',
      expression: "variables.stampRemoves + variables.revisionAnnotations.filter(a, a[1] == '').map(a, a[0])",
    },
  ];
}

/** A wanted variable (`w`, one of variables.env) as an env entry. */
const ENV_ENTRY = "{'name': w[0], 'value': w[1]}";

/** One env operation `x` of variables.envOperations (`op path [index into variables.env]`) as a patch. */
const ENV_PATCH =
  `x[0] == 'set' ? JSONPatch{op: 'add', path: x[1], value: variables.env.map(w, ${ENV_ENTRY})} : ` +
  "x[0] == 'remove' ? JSONPatch{op: 'remove', path: x[1]} : " +
  `JSONPatch{op: x[0], path: x[1], value: ${bind('w', 'variables.env[int(x[2])]', ENV_ENTRY)}}`;

/** The JSONPatch: every change mutatePod makes, as operations on the input Pod. */
export function policyPatchExpression(): string {
  const a = 'variables.annotations';
  const l = 'variables.labels';
  const path = (i: string): string =>
    `(${i} < variables.containerCount ? '/spec/containers/' + string(${i}) : '/spec/initContainers/' + string(${i} - variables.containerCount))`;
  const mount = `{'mountPath': dyn(${param(K.trustBundleMountPath)}), 'name': dyn(${param(K.trustBundleVolume)}), 'readOnly': dyn(true)}`;
  const volume =
    `{'name': dyn(${param(K.trustBundleVolume)}), 'projected': dyn({'defaultMode': dyn(${CTB_DEFAULT_MODE}), ` +
    `'sources': dyn([{'clusterTrustBundle': {'name': ${param(K.trustBundleName)}, 'path': ${param(K.trustBundlePath)}}}])})}`;
  const ops = [
    // Images.
    `variables.all.transformList(i, c, variables.images[i] != '', JSONPatch{op: 'replace', path: ${path('i')} + '/image', value: variables.images[i]})`,
    // The pull Secret's reference.
    `(variables.pullSecret ? [has(object.spec.imagePullSecrets) ? ` +
      `JSONPatch{op: 'add', path: '/spec/imagePullSecrets/-', value: {'name': ${param(K.pullSecret)}}} : ` +
      `JSONPatch{op: 'add', path: '/spec/imagePullSecrets', value: [{'name': ${param(K.pullSecret)}}]}] : [])`,
    // Env of every container and init container (variables.envOperations).
    `variables.envOperations.map(d, ${bind('x', "d.split(' ')", ENV_PATCH)})`,
    // The trust-bundle volume and mounts.
    `(variables.mounted && variables.volumeMissing ? [has(object.spec.volumes) ? ` +
      `JSONPatch{op: 'add', path: '/spec/volumes/-', value: ${volume}} : ` +
      `JSONPatch{op: 'add', path: '/spec/volumes', value: [${volume}]}] : [])`,
    `variables.all.transformList(i, c, variables.mountTargets[i], has(c.volumeMounts) ? ` +
      `JSONPatch{op: 'add', path: ${path('i')} + '/volumeMounts/-', value: ${mount}} : ` +
      `JSONPatch{op: 'add', path: ${path('i')} + '/volumeMounts', value: [${mount}]})`,
    // Labels: the trust-bundle mark and the revision label.
    `(variables.stampLabel && !has(object.metadata.labels) ? [JSONPatch{op: 'add', path: '/metadata/labels', value: {}}] : [])`,
    `(variables.stampLabel ? [JSONPatch{op: 'add', path: '/metadata/labels/${pointer(CTB_MOUNTED_LABEL)}', value: ${celString(CTB_MOUNTED_VALUE)}}] : [])`,
    `(variables.revisionLabel != '' && !(variables.stampLabel || has(object.metadata.labels)) ? [JSONPatch{op: 'add', path: '/metadata/labels', value: {}}] : [])`,
    `(variables.revisionLabel != '' && !(${celString(REVISION_LABEL)} in ${l} && ${l}[${celString(REVISION_LABEL)}] == variables.revisionLabel) ? ` +
      `[JSONPatch{op: 'add', path: '/metadata/labels/${pointer(REVISION_LABEL)}', value: variables.revisionLabel}] : [])`,
    `(variables.revisionLabel == '' && ${celString(REVISION_LABEL)} in ${l} ? [JSONPatch{op: 'remove', path: '/metadata/labels/${pointer(REVISION_LABEL)}'}] : [])`,
    // Annotations: the marks, the trust-bundle hash and the revision stamp.
    `(size(variables.annotationSets) > 0 && !has(object.metadata.annotations) ? [JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}] : [])`,
    `variables.annotationSets.filter(s, !(s[0] in ${a} && ${a}[s[0]] == s[1])).map(s, JSONPatch{op: 'add', path: '/metadata/annotations/' + ${escaped('s[0]')}, value: s[1]})`,
    `variables.annotationRemoves.filter(r, r in ${a}).map(r, JSONPatch{op: 'remove', path: '/metadata/annotations/' + ${escaped('r')}})`,
  ];
  return `variables.deferred ? [] : ${ops.join(' +\n')}`;
}

/**
 * The matchConditions: Pods the policy leaves to the webhook whatever the parameters say, so the
 * CEL's cost stays bounded (docs/admission-policy.md).
 */
export function policyMatchConditions(): { name: string; expression: string }[] {
  const lists = ['containers', 'initContainers'];
  const count = lists.map((k) => `(has(object.spec.${k}) ? size(object.spec.${k}) : 0)`).join(' + ');
  const perContainer = lists
    .map(
      (k) =>
        `(!has(object.spec.${k}) || object.spec.${k}.all(c, (!has(c.env) || size(c.env) <= ${POLICY_MAX_LIST}) && ` +
        `(!has(c.volumeMounts) || size(c.volumeMounts) <= ${POLICY_MAX_LIST})))`,
    )
    .join(' && ');
  return [
    { name: 'at-most-so-many-containers', expression: `${count} <= ${POLICY_MAX_CONTAINERS}` },
    {
      name: 'bounded-lists',
      expression:
        `(!has(object.spec.volumes) || size(object.spec.volumes) <= ${POLICY_MAX_LIST}) && ` +
        `(!has(object.spec.imagePullSecrets) || size(object.spec.imagePullSecrets) <= ${POLICY_MAX_LIST}) && ${perContainer}`,
    },
  ];
}
