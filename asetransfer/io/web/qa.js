// The QA page of one transferred rig (asetransfer/io/qa_page.py writes the page around it).
// Reads the page's JSON (#qa-data) and its glTF rig (#qa-rig, base64), shows the rigged
// target with its skeleton, markers, weights, fit distance and test poses, and exposes
// window.asetransferQA for scripts and tests.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';

const data = JSON.parse(document.getElementById('qa-data').textContent);
const api = window.asetransferQA = { ready: false, errors: [] };
window.addEventListener('error', (e) => api.errors.push(String(e.message)));
window.addEventListener('unhandledrejection', (e) => api.errors.push(String(e.reason)));

const PLAIN = new THREE.Color().setRGB(0.74, 0.77, 0.82, THREE.SRGBColorSpace);
const FLAG_COLOURS = { poor: 0xff2020, check: 0xff9900 };
const MARKER_COLOURS = { sure: 0x33cc33, unsure: 0xff9900, low: 0xff2020 };
// heat map: dark blue (0) -> cyan -> yellow -> red (1)
const RAMP = [[0.10, 0.12, 0.45], [0.0, 0.75, 0.85], [0.98, 0.9, 0.15], [0.85, 0.05, 0.05]];

function ramp(t) {
  const x = Math.min(Math.max(t, 0), 1) * (RAMP.length - 1);
  const i = Math.min(Math.floor(x), RAMP.length - 2), f = x - i;
  const a = RAMP[i], b = RAMP[i + 1];
  return new THREE.Color().setRGB(a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2]),
                                  THREE.SRGBColorSpace);
}

function el(id) { return document.getElementById(id); }

async function loadRig() {
  const base64 = el('qa-rig').textContent.trim();
  const buffer = await (await fetch('data:application/octet-stream;base64,' + base64)).arrayBuffer();
  return new Promise((resolve, reject) => new GLTFLoader().parse(buffer, '', resolve, reject));
}

// The skinned meshes in glTF mesh order (the order the page's data refers to).
function meshesOf(gltf) {
  const found = [];
  gltf.scene.traverse((o) => {
    const link = gltf.parser.associations.get(o);
    if (o.isSkinnedMesh && link && link.meshes !== undefined) found.push([link.meshes, o]);
  });
  return found.sort((a, b) => a[0] - b[0]).map((x) => x[1]);
}

// Each vertex's weight on joint j, from all influence slots (JOINTS_0/1, WEIGHTS_0/1).  The
// loader renormalised the first four to sum 1; the file's first four summed 1 - sum(second four).
function weightOn(mesh, j) {
  const a = mesh.geometry.attributes, n = a.position.count, out = new Float32Array(n);
  const idx1 = a.joints_1, w1 = a.weights_1;
  for (let v = 0; v < n; v++) {
    let rest = 0, w = 0;
    if (idx1) {
      for (let k = 0; k < 4; k++) {
        const wk = w1.getComponent(v, k);
        rest += wk;
        if (idx1.getComponent(v, k) === j) w += wk;
      }
    }
    for (let k = 0; k < 4; k++) {
      if (a.skinIndex.getComponent(v, k) === j) w += a.skinWeight.getComponent(v, k) * (1 - rest);
    }
    out[v] = w;
  }
  return out;
}

class Viewer {
  constructor(gltf) {
    this.gltf = gltf;
    this.meshes = meshesOf(gltf);
    this.bones = this.meshes[0].skeleton.bones;
    this.holder = new THREE.Group();
    const f = data.frame;  // the body's left, up, forward -> x, y, z: the character faces the camera
    this.holder.matrixAutoUpdate = false;
    this.holder.matrix.set(...f.left, 0, ...f.up, 0, ...f.forward, 0, 0, 0, 0, 1);
    this.holder.add(gltf.scene);
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(0xf4f5f7);
    this.scene.add(this.holder);
    this.mixer = new THREE.AnimationMixer(gltf.scene);
    this.clips = Object.fromEntries(gltf.animations.map((c) => [c.name, c]));
    this.selected = -1;
    this.mode = 'plain';
    for (const m of this.meshes) this.prepareMesh(m);
    this.holder.updateMatrixWorld(true);
    this.setupView();
    this.setupSkeleton();
    this.setupMarkers();
  }

  prepareMesh(m) {
    if (!m.geometry.attributes.normal) m.geometry.computeVertexNormals();
    const n = m.geometry.attributes.position.count;
    m.geometry.setAttribute('color', new THREE.BufferAttribute(new Float32Array(3 * n), 3));
    m.material = new THREE.MeshLambertMaterial({ vertexColors: true, side: THREE.DoubleSide,
                                                 transparent: true, opacity: 1 });
    m.frustumCulled = false;  // poses move the body outside its bind-pose bounds
  }

  // The box around the body at rest and at the end of every clip (sampled vertices): the view frames them all.
  reach() {
    const box = new THREE.Box3(), p = new THREE.Vector3();
    const expand = () => {
      this.gltf.scene.updateMatrixWorld(true);
      for (const m of this.meshes) {
        const n = m.geometry.attributes.position.count, step = Math.max(1, Math.floor(n / 5000));
        for (let v = 0; v < n; v += step) box.expandByPoint(m.getVertexPosition(v, p).applyMatrix4(m.matrixWorld));
      }
    };
    expand();
    for (const clip of Object.values(this.clips)) {
      const action = this.mixer.clipAction(clip);
      action.play();
      action.time = clip.duration;
      this.mixer.update(0);
      expand();
      action.stop();
    }
    this.mixer.update(0);
    return box;
  }

  setupView() {
    const box = this.reach();
    this.box = box;
    this.size = box.getSize(new THREE.Vector3()).length();
    const centre = box.getCenter(new THREE.Vector3());
    const view = el('view');
    this.renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    this.renderer.setPixelRatio(window.devicePixelRatio || 1);
    view.appendChild(this.renderer.domElement);
    this.camera = new THREE.PerspectiveCamera(30, 1, this.size / 200, this.size * 50);
    // far enough for the box's front to fit the view's height and width, with a margin
    const extent = box.getSize(new THREE.Vector3()), half = Math.tan(THREE.MathUtils.degToRad(15));
    const aspect = (view.clientWidth || 800) / (view.clientHeight || 600);
    const distance = 1.1 * Math.max(extent.y / 2 / half, extent.x / 2 / (half * aspect)) + extent.z / 2;
    this.camera.position.copy(centre).add(new THREE.Vector3(0.5, 0.15, 1).normalize().multiplyScalar(distance));
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.target.copy(centre);
    this.controls.update();
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x505060, 1.6));
    const light = new THREE.DirectionalLight(0xffffff, 1.8);
    light.position.set(0.4, 0.6, 1);
    this.camera.add(light);
    this.scene.add(this.camera);
    this.resize();
    window.addEventListener('resize', () => this.resize());
  }

  resize() {
    const view = el('view'), w = view.clientWidth || 800, h = view.clientHeight || 600;
    this.renderer.setSize(w, h);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
  }

  setupSkeleton() {
    const parents = data.joints.parents, pairs = [];
    parents.forEach((p, j) => { if (p >= 0) pairs.push([p, j]); });
    this.pairs = pairs;
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(6 * pairs.length), 3));
    this.lines = new THREE.LineSegments(geometry, new THREE.LineBasicMaterial({
      color: 0x1f77b4, depthTest: false, transparent: true, opacity: 0.9 }));
    this.lines.renderOrder = 10;
    this.lines.frustumCulled = false;
    this.scene.add(this.lines);
    const radius = 0.004 * this.size;
    this.dots = new THREE.InstancedMesh(new THREE.SphereGeometry(radius, 10, 6),
      new THREE.MeshBasicMaterial({ depthTest: false, transparent: true }), this.bones.length);
    this.dots.renderOrder = 11;
    this.dots.frustumCulled = false;
    this.scene.add(this.dots);
    this.colourJoints();
  }

  colourJoints() {
    const c = new THREE.Color();
    this.bones.forEach((_, j) => {
      const flag = data.joints.flags[j];
      c.set(j === this.selected ? 0xffee00 : flag ? FLAG_COLOURS[flag[0]] : 0x1f77b4);
      this.dots.setColorAt(j, c);
    });
    this.dots.instanceColor.needsUpdate = true;
  }

  setupMarkers() {
    const radius = 0.006 * this.size;
    this.markerDots = new THREE.InstancedMesh(new THREE.SphereGeometry(radius, 12, 8),
      new THREE.MeshBasicMaterial(), Math.max(data.markers.length, 1));
    this.markerDots.count = data.markers.length;
    this.markerDots.frustumCulled = false;
    const c = new THREE.Color();
    data.markers.forEach((mk, k) => this.markerDots.setColorAt(k, c.set(MARKER_COLOURS[mk.level])));
    if (data.markers.length) this.markerDots.instanceColor.needsUpdate = true;
    this.scene.add(this.markerDots);
    this.labels = data.markers.map((mk) => {
      const div = document.createElement('div');
      div.className = 'label';
      div.textContent = mk.name;
      el('labels').appendChild(div);
      return div;
    });
  }

  skinned(meshIndex, v, target) {
    const m = this.meshes[meshIndex];
    return m.getVertexPosition(v, target).applyMatrix4(m.matrixWorld);
  }

  markerPosition(k, target) {
    const mk = data.markers[k], p = new THREE.Vector3();
    target.set(0, 0, 0);
    mk.corners.forEach(([mesh, v], i) => target.addScaledVector(this.skinned(mesh, v, p), mk.bary[i]));
    return target;
  }

  update() {
    this.gltf.scene.updateMatrixWorld(true);
    const pos = this.lines.geometry.attributes.position, a = new THREE.Vector3(), b = new THREE.Vector3();
    this.pairs.forEach(([p, j], i) => {
      a.setFromMatrixPosition(this.bones[p].matrixWorld);
      b.setFromMatrixPosition(this.bones[j].matrixWorld);
      pos.setXYZ(2 * i, a.x, a.y, a.z);
      pos.setXYZ(2 * i + 1, b.x, b.y, b.z);
    });
    pos.needsUpdate = true;
    const m = new THREE.Matrix4(), scale = new THREE.Vector3();
    this.bones.forEach((bone, j) => {
      scale.setScalar(j === this.selected ? 2.2 : data.joints.flags[j] ? 1.6 : 1);
      m.compose(a.setFromMatrixPosition(bone.matrixWorld), new THREE.Quaternion(), scale);
      this.dots.setMatrixAt(j, m);
    });
    this.dots.instanceMatrix.needsUpdate = true;
    data.markers.forEach((_, k) => {
      m.makeTranslation(this.markerPosition(k, a));
      this.markerDots.setMatrixAt(k, m);
    });
    this.markerDots.instanceMatrix.needsUpdate = true;
    this.placeLabels();
  }

  placeLabels() {
    const show = el('show-labels').checked && el('show-markers').checked, p = new THREE.Vector3();
    const w = this.renderer.domElement.clientWidth, h = this.renderer.domElement.clientHeight;
    this.labels.forEach((div, k) => {
      div.style.display = show ? 'block' : 'none';
      if (!show) return;
      this.markerPosition(k, p).project(this.camera);
      div.style.transform = `translate(${(p.x + 1) / 2 * w + 6}px, ${(1 - p.y) / 2 * h - 6}px)`;
    });
  }

  // Vertex colours of the current mode: plain, the selected joint's weights, or the fit distance.
  recolour() {
    const c = new THREE.Color();
    for (const m of this.meshes) {
      const colour = m.geometry.attributes.color, n = colour.count;
      const weights = this.mode === 'weights' && this.selected >= 0 ? weightOn(m, this.selected) : null;
      const fit = m.geometry.attributes._fit;
      for (let v = 0; v < n; v++) {
        if (weights) c.copy(weights[v] > 0 ? ramp(0.12 + 0.88 * weights[v]) : ramp(0));
        else if (this.mode === 'fit' && fit) {
          const d = fit.getX(v);
          if (d < 0) c.setRGB(0.62, 0.45, 0.75, THREE.SRGBColorSpace);  // carried along, not fitted
          else c.copy(ramp(d / data.fit.poor));
        } else c.copy(PLAIN);
        colour.setXYZ(v, c.r, c.g, c.b);
      }
      colour.needsUpdate = true;
    }
    el('legend-weights').style.display = this.mode === 'weights' ? 'grid' : 'none';
    el('legend-fit').style.display = this.mode === 'fit' ? 'grid' : 'none';
  }

  selectBone(which) {
    const j = typeof which === 'number' ? which : data.joints.names.indexOf(which);
    if (j < 0 || j >= this.bones.length) throw new Error(`no joint ${which}`);
    this.selected = j;
    this.mode = 'weights';
    el('mode-weights').checked = true;
    el('joint-select').value = String(j);
    this.colourJoints();
    this.recolour();
    const flag = data.joints.flags[j], parent = data.joints.parents[j];
    let count = 0;
    for (const m of this.meshes) count += weightOn(m, j).filter((w) => w > 0.01).length;
    el('selection').textContent = data.joints.names[j]
      + (parent >= 0 ? ` (child of ${data.joints.names[parent]})` : ' (root)')
      + ` - ${count} vertices weighted` + (flag ? ` - ${flag[0]}: ${flag[1]}` : '');
    return j;
  }

  playPose(name, time) {
    this.mixer.stopAllAction();
    if (name === 'rest' || !this.clips[name]) { this.mixer.setTime(0); this.pose = null; return; }
    const action = this.mixer.clipAction(this.clips[name]);
    action.setLoop(THREE.LoopOnce, 1);
    action.clampWhenFinished = true;
    action.reset().play();
    this.pose = action;
    if (time !== undefined) this.setPoseTime(time);
  }

  setPoseTime(t) {
    if (!this.pose) return;
    this.pose.paused = true;
    this.pose.time = t * this.pose.getClip().duration;
    this.mixer.update(0);
    el('pose-time').value = String(t);
  }
}

function pick(viewer, event, radius) {
  const rect = viewer.renderer.domElement.getBoundingClientRect();
  const x = event.clientX - rect.left, y = event.clientY - rect.top, p = new THREE.Vector3();
  let best = null, bestD = radius;
  const consider = (kind, index, position) => {
    position.project(viewer.camera);
    const d = Math.hypot((position.x + 1) / 2 * rect.width - x, (1 - position.y) / 2 * rect.height - y);
    if (d < bestD) { bestD = d; best = { kind, index }; }
  };
  viewer.bones.forEach((bone, j) => consider('joint', j, p.setFromMatrixPosition(bone.matrixWorld)));
  if (el('show-markers').checked) data.markers.forEach((_, k) => consider('marker', k, viewer.markerPosition(k, p)));
  if (best) return best;
  // on a bone (parent -> joint): the parent's, whose weights move it
  const screen = (bone) => {
    const q = new THREE.Vector3().setFromMatrixPosition(bone.matrixWorld).project(viewer.camera);
    return [(q.x + 1) / 2 * rect.width, (1 - q.y) / 2 * rect.height];
  };
  bestD = radius / 2;
  for (const [parent, j] of viewer.pairs) {
    const [ax, ay] = screen(viewer.bones[parent]), [bx, by] = screen(viewer.bones[j]);
    const dx = bx - ax, dy = by - ay;
    const t = Math.min(Math.max(((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy || 1), 0), 1);
    const d = Math.hypot(ax + t * dx - x, ay + t * dy - y);
    if (d < bestD) { bestD = d; best = { kind: 'joint', index: parent }; }
  }
  return best;
}

// A click on the body selects the joint that weighs most on the vertex nearest the hit.
function jointUnder(viewer, event) {
  const rect = viewer.renderer.domElement.getBoundingClientRect();
  const ndc = new THREE.Vector2((event.clientX - rect.left) / rect.width * 2 - 1,
                                -(event.clientY - rect.top) / rect.height * 2 + 1);
  const ray = new THREE.Raycaster();
  ray.setFromCamera(ndc, viewer.camera);
  const hit = ray.intersectObjects(viewer.meshes, false)[0];
  if (!hit) return -1;
  const a = hit.object.geometry.attributes, v = hit.face.a;
  let best = -1, bestW = 0;
  for (let k = 0; k < 4; k++) {
    const w = a.skinWeight.getComponent(v, k);
    if (w > bestW) { bestW = w; best = a.skinIndex.getComponent(v, k); }
  }
  return best;
}

function setupPanel(viewer) {
  const select = el('joint-select');
  data.joints.names.forEach((name, j) => {
    const option = document.createElement('option');
    option.value = String(j);
    option.textContent = (data.joints.flags[j] ? '! ' : '') + name;
    select.appendChild(option);
  });
  select.addEventListener('change', () => viewer.selectBone(Number(select.value)));
  for (const mode of ['plain', 'weights', 'fit']) {
    el(`mode-${mode}`).addEventListener('change', () => { viewer.mode = mode; viewer.recolour(); });
  }
  const poses = el('poses');
  for (const name of ['rest', ...data.poses]) {
    const button = document.createElement('button');
    button.textContent = name;
    button.addEventListener('click', () => viewer.playPose(name));
    poses.appendChild(button);
  }
  for (const link of document.querySelectorAll('.flagged a')) {
    link.addEventListener('click', () => viewer.selectBone(link.dataset.joint));
  }
  el('pose-time').addEventListener('input', (e) => viewer.setPoseTime(Number(e.target.value)));
  el('show-skeleton').addEventListener('change', (e) => {
    viewer.lines.visible = viewer.dots.visible = e.target.checked;
  });
  el('show-markers').addEventListener('change', (e) => { viewer.markerDots.visible = e.target.checked; });
  el('xray').addEventListener('change', (e) => viewer.meshes.forEach((m) => {
    m.material.opacity = e.target.checked ? 0.45 : 1;
    m.material.depthWrite = !e.target.checked;
  }));
  const tip = el('tip'), canvas = viewer.renderer.domElement;
  canvas.addEventListener('pointermove', (event) => {
    const found = pick(viewer, event, 9);
    tip.style.display = found ? 'block' : 'none';
    if (!found) return;
    const rect = canvas.getBoundingClientRect();
    const flag = found.kind === 'joint' && data.joints.flags[found.index];
    tip.textContent = found.kind === 'joint' ? data.joints.names[found.index] + (flag ? ` (${flag[1]})` : '')
      : `marker ${data.markers[found.index].name}`;
    tip.style.transform = `translate(${event.clientX - rect.left + 12}px, ${event.clientY - rect.top + 12}px)`;
  });
  let down = null;
  canvas.addEventListener('pointerdown', (e) => { down = [e.clientX, e.clientY]; });
  canvas.addEventListener('pointerup', (event) => {
    if (!down || Math.hypot(event.clientX - down[0], event.clientY - down[1]) > 4) return;  // a drag orbits
    const found = pick(viewer, event, 9);
    const j = found && found.kind === 'joint' ? found.index : jointUnder(viewer, event);
    if (j >= 0) viewer.selectBone(j);
  });
}

function exposeApi(viewer) {
  Object.assign(api, {
    viewer,
    joints: data.joints.names,
    poses: data.poses,
    selectBone: (name) => viewer.selectBone(name),
    playPose: (name, time) => viewer.playPose(name, time),
    setColourMode: (mode) => { viewer.mode = mode; el(`mode-${mode}`).checked = true; viewer.recolour(); },
    // the colours of the first n vertices of the first mesh (r, g, b each)
    vertexColours: (n = 1e9) => Array.from(viewer.meshes[0].geometry.attributes.color.array.slice(0, 3 * n)),
    // skinned world positions of every vertex of the first mesh, in the pose shown
    skinnedPositions: () => {
      viewer.gltf.scene.updateMatrixWorld(true);
      const m = viewer.meshes[0], n = m.geometry.attributes.position.count, out = [], p = new THREE.Vector3();
      for (let v = 0; v < n; v++) { m.getVertexPosition(v, p).applyMatrix4(m.matrixWorld); out.push(p.x, p.y, p.z); }
      return out;
    },
    render: () => { viewer.update(); viewer.renderer.render(viewer.scene, viewer.camera); },
  });
}

async function main() {
  const timings = api.timings = { start: performance.now() };
  const gltf = await loadRig();
  timings.rig = performance.now();
  const viewer = new Viewer(gltf);
  timings.viewer = performance.now();
  setupPanel(viewer);
  exposeApi(viewer);
  viewer.recolour();
  const clock = new THREE.Clock();
  viewer.renderer.setAnimationLoop(() => {
    viewer.mixer.update(clock.getDelta());
    const pose = viewer.pose;
    if (pose && !pose.paused) el('pose-time').value = String(pose.time / pose.getClip().duration);
    viewer.controls.update();
    viewer.update();
    viewer.renderer.render(viewer.scene, viewer.camera);
  });
  api.loadSeconds = performance.now() / 1000;  // since the page began to load
  api.ready = true;
  el('status').textContent = '';
}

main().catch((e) => {
  api.errors.push(String(e && e.stack || e));
  el('status').textContent = 'The rig could not be shown: ' + e;
  console.error(e);
});
