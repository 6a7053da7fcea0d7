import { useEffect, useRef, useState } from 'react';
import * as THREE from 'three';
import { GLTFLoader } from 'three/examples/jsm/loaders/GLTFLoader.js';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';

export const VIEWER_BACKGROUND = 0x1e2430;

/** A GLB or glTF model, framed to fit, lit, and turned with the mouse. */
export default function ModelViewer({ url }: { url: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [state, setState] = useState('loading');
  useEffect(() => {
    const renderer = new THREE.WebGLRenderer({ canvas: canvas.current!, antialias: true, preserveDrawingBuffer: true });
    renderer.setSize(480, 360, false);
    const scene = new THREE.Scene();
    scene.background = new THREE.Color(VIEWER_BACKGROUND);
    scene.add(new THREE.HemisphereLight(0xffffff, 0x444444, 2.5));
    const sun = new THREE.DirectionalLight(0xffffff, 2);
    sun.position.set(3, 5, 4);
    scene.add(sun);
    const camera = new THREE.PerspectiveCamera(45, 480 / 360, 0.01, 1000);
    const controls = new OrbitControls(camera, renderer.domElement);
    const render = () => renderer.render(scene, camera);
    controls.addEventListener('change', render);
    let disposed = false;
    new GLTFLoader().load(url, (gltf) => {
      if (disposed) return;
      const model = gltf.scene;
      const box = new THREE.Box3().setFromObject(model);
      const size = box.getSize(new THREE.Vector3()).length() || 1;
      const centre = box.getCenter(new THREE.Vector3());
      model.position.sub(centre);
      // Untextured meshes would be black under missing materials: give them a plain one.
      model.traverse((o) => {
        const mesh = o as THREE.Mesh;
        if (mesh.isMesh && !mesh.material) mesh.material = new THREE.MeshStandardMaterial({ color: 0xcccccc });
      });
      scene.add(model);
      camera.position.set(size * 0.6, size * 0.4, size * 0.8);
      camera.near = size / 100;
      camera.far = size * 100;
      camera.updateProjectionMatrix();
      controls.target.set(0, 0, 0);
      controls.update();
      render();
      setState('ready');
    }, undefined, (err) => setState(`failed: ${String((err as Error).message ?? err)}`));
    return () => { disposed = true; controls.dispose(); renderer.dispose(); };
  }, [url]);
  return (
    <div className="viewer">
      <canvas ref={canvas} width={480} height={360} data-testid="model-viewer" data-state={state} />
      {state !== 'ready' && <p>{state}</p>}
    </div>
  );
}
